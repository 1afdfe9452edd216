package server

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/netguard"
)

// CreateWebhook subscribes a URL to the account's events.
func (s *Server) CreateWebhook(ctx context.Context, req gen.CreateWebhookRequestObject) (gen.CreateWebhookResponseObject, error) {
	b := req.Body
	if err := s.checkWebhookURL(b.Url); err != nil {
		return nil, err
	}
	w := domain.Webhook{AccountID: principalFrom(ctx).Account.ID, URL: b.Url, Events: eventStrings(b.Events),
		Description: deref(b.Description), AgentID: deref(b.AgentId), Enabled: b.Enabled == nil || *b.Enabled}
	created, err := s.cfg.Store.Webhooks.CreateWebhook(ctx, w)
	if err != nil {
		return nil, err
	}
	return gen.CreateWebhook201JSONResponse{Body: gen.WebhookSecretEnvelope{Success: true, Data: webhookWithSecret(created)}}, nil
}

// ListWebhooks returns a page of the account's webhooks.
func (s *Server) ListWebhooks(ctx context.Context, req gen.ListWebhooksRequestObject) (gen.ListWebhooksResponseObject, error) {
	page, limit := pageParams(req.Params.Page, req.Params.Limit)
	hooks, total, err := s.cfg.Store.Webhooks.ListWebhooks(ctx, principalFrom(ctx).Account.ID, page, limit)
	if err != nil {
		return nil, err
	}
	items := make([]gen.Webhook, len(hooks))
	for i, w := range hooks {
		items[i] = webhook(w)
	}
	return gen.ListWebhooks200JSONResponse{Body: gen.WebhookListEnvelope{Success: true,
		Data: gen.WebhookList{Items: items, Pagination: pagination(page, limit, total)}}}, nil
}

// GetWebhook returns one webhook, without its secret, and its ETag; 304
// when If-None-Match names it.
func (s *Server) GetWebhook(ctx context.Context, req gen.GetWebhookRequestObject) (gen.GetWebhookResponseObject, error) {
	w, err := s.cfg.Store.Webhooks.GetWebhook(ctx, principalFrom(ctx).Account.ID, req.WebhookId)
	if err != nil {
		return nil, err
	}
	if noneMatch(req.Params.IfNoneMatch, w.Version) {
		return gen.GetWebhook304Response{Headers: gen.NotModifiedResponseHeaders{ETag: etag(w.Version)}}, nil
	}
	return gen.GetWebhook200JSONResponse{Body: gen.WebhookEnvelope{Success: true, Data: webhook(w)},
		Headers: gen.GetWebhook200ResponseHeaders{ETag: etag(w.Version)}}, nil
}

// UpdateWebhook replaces the members present in the body.
func (s *Server) UpdateWebhook(ctx context.Context, req gen.UpdateWebhookRequestObject) (gen.UpdateWebhookResponseObject, error) {
	b := req.Body
	if b.Url != nil {
		if err := s.checkWebhookURL(*b.Url); err != nil {
			return nil, err
		}
	}
	c := domain.WebhookChanges{URL: b.Url, Description: b.Description, Enabled: b.Enabled}
	if b.Events != nil {
		c.Events = eventStrings(*b.Events)
	}
	w, changes, err := s.cfg.Store.Webhooks.UpdateWebhook(ctx, principalFrom(ctx).Account.ID, req.WebhookId, c, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	v := webhook(w)
	return gen.UpdateWebhook200JSONResponse{Body: gen.WebhookUpdatedEnvelope{Success: true, Data: gen.WebhookUpdated{
		Id: v.Id, Url: v.Url, Events: v.Events, Description: v.Description, AgentId: v.AgentId, Enabled: v.Enabled,
		DisabledReason: v.DisabledReason, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, Changes: changes,
	}}, Headers: gen.UpdateWebhook200ResponseHeaders{ETag: etag(w.Version)}}, nil
}

// DeleteWebhook deletes a webhook and drops its pending deliveries.
func (s *Server) DeleteWebhook(ctx context.Context, req gen.DeleteWebhookRequestObject) (gen.DeleteWebhookResponseObject, error) {
	if err := s.cfg.Store.Webhooks.DeleteWebhook(ctx, principalFrom(ctx).Account.ID, req.WebhookId, ifMatch(req.Params.IfMatch)); err != nil {
		return nil, err
	}
	return gen.DeleteWebhook200JSONResponse{Body: gen.WebhookDeletedEnvelope{Success: true,
		Data: gen.WebhookDeleted{Id: req.WebhookId, DeletedAt: timestamp(time.Now())}}}, nil
}

// RotateWebhookSecret gives the webhook a new secret, shown here only.
func (s *Server) RotateWebhookSecret(ctx context.Context, req gen.RotateWebhookSecretRequestObject) (gen.RotateWebhookSecretResponseObject, error) {
	w, err := s.cfg.Store.Webhooks.RotateWebhookSecret(ctx, principalFrom(ctx).Account.ID, req.WebhookId)
	if err != nil {
		return nil, err
	}
	return gen.RotateWebhookSecret200JSONResponse{Body: gen.WebhookSecretEnvelope{Success: true, Data: webhookWithSecret(w)}}, nil
}

// TestWebhook queues a webhook.test event to the webhook alone.
func (s *Server) TestWebhook(ctx context.Context, req gen.TestWebhookRequestObject) (gen.TestWebhookResponseObject, error) {
	if err := s.cfg.Store.Webhooks.TestWebhook(ctx, principalFrom(ctx).Account.ID, req.WebhookId); err != nil {
		return nil, err
	}
	return gen.TestWebhook202Response{}, nil
}

// ListWebhookDeliveries returns a page of the webhook's deliveries.
func (s *Server) ListWebhookDeliveries(ctx context.Context, req gen.ListWebhookDeliveriesRequestObject) (gen.ListWebhookDeliveriesResponseObject, error) {
	p := req.Params
	page, limit := pageParams(p.Page, p.Limit)
	q := domain.DeliveryQuery{Page: page, Limit: limit, Status: domain.DeliveryStatus(deref(p.Status))}
	ds, total, err := s.cfg.Store.Webhooks.ListDeliveries(ctx, principalFrom(ctx).Account.ID, req.WebhookId, q)
	if err != nil {
		return nil, err
	}
	items := make([]gen.WebhookDelivery, len(ds))
	for i, d := range ds {
		items[i] = delivery(d)
	}
	return gen.ListWebhookDeliveries200JSONResponse{Body: gen.WebhookDeliveryListEnvelope{Success: true,
		Data: gen.WebhookDeliveryList{Items: items, Pagination: pagination(page, limit, total)}}}, nil
}

// RetryWebhookDelivery queues one more attempt of a delivery.
func (s *Server) RetryWebhookDelivery(ctx context.Context, req gen.RetryWebhookDeliveryRequestObject) (gen.RetryWebhookDeliveryResponseObject, error) {
	if err := s.cfg.Store.Webhooks.RetryDelivery(ctx, principalFrom(ctx).Account.ID, req.WebhookId, req.DeliveryId); err != nil {
		return nil, err
	}
	return gen.RetryWebhookDelivery202Response{}, nil
}

// checkWebhookURL refuses what can never be delivered to (netguard.CheckURL):
// not http(s), no host, credentials, or unless private networks are
// allowed a literal internal address. Where a name resolves is checked at
// each attempt.
func (s *Server) checkWebhookURL(raw string) error {
	if reason := netguard.CheckURL(raw, s.cfg.AllowPrivateNetworks); reason != "" {
		return invalidRequest("url", reason)
	}
	return nil
}

func eventStrings(in []gen.WebhookEventSelector) []string {
	out := make([]string, len(in))
	for i, e := range in {
		out[i] = string(e)
	}
	return out
}

func webhook(w domain.Webhook) gen.Webhook {
	events := make([]gen.WebhookEventSelector, len(w.Events))
	for i, e := range w.Events {
		events[i] = gen.WebhookEventSelector(e)
	}
	out := gen.Webhook{Id: w.ID, Url: w.URL, Events: events, Description: w.Description, Enabled: w.Enabled,
		CreatedAt: timestamp(w.CreatedAt), UpdatedAt: timestamp(w.UpdatedAt)}
	if w.AgentID != "" {
		out.AgentId = &w.AgentID
	}
	if w.DisabledReason != "" {
		out.DisabledReason = &w.DisabledReason
	}
	return out
}

func webhookWithSecret(w domain.Webhook) gen.WebhookWithSecret {
	v := webhook(w)
	return gen.WebhookWithSecret{Id: v.Id, Url: v.Url, Events: v.Events, Description: v.Description, AgentId: v.AgentId,
		Enabled: v.Enabled, DisabledReason: v.DisabledReason, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, Secret: w.Secret}
}

func delivery(d domain.Delivery) gen.WebhookDelivery {
	out := gen.WebhookDelivery{Id: d.ID, EventId: d.EventID, Type: gen.WebhookEventType(d.Type),
		Status: gen.DeliveryStatus(d.Status), Attempts: d.Attempts, CreatedAt: timestamp(d.CreatedAt)}
	if d.LastStatusCode != 0 {
		out.LastStatusCode = &d.LastStatusCode
	}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	if !d.NextAttemptAt.IsZero() {
		next := timestamp(d.NextAttemptAt)
		out.NextAttemptAt = &next
	}
	if !d.LastAttemptAt.IsZero() {
		last := timestamp(d.LastAttemptAt)
		out.LastAttemptAt = &last
	}
	return out
}
