package server

import (
	"context"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// ListConnections reports the agent's connection to each platform of its
// clients, as the replica running it stored it.
func (s *Server) ListConnections(ctx context.Context, req gen.ListConnectionsRequestObject) (gen.ListConnectionsResponseObject, error) {
	accountID := principalFrom(ctx).Account.ID
	agent, err := s.cfg.Store.Agents.GetAgent(ctx, accountID, req.AgentId)
	if err != nil {
		return nil, err
	}
	stored, err := s.cfg.Store.Connections.ListConnections(ctx, accountID, req.AgentId)
	if err != nil {
		return nil, err
	}
	byPlatform := make(map[string]domain.Connection, len(stored))
	for _, c := range stored {
		byPlatform[c.Platform] = c
	}
	clients := agent.Fields.Clients()
	items := make([]gen.Connection, 0, len(clients))
	for _, platform := range clients {
		c, ok := byPlatform[platform]
		if !ok {
			c = notStarted(agent, platform)
		}
		items = append(items, connection(c))
	}
	return gen.ListConnections200JSONResponse{Body: gen.ConnectionListEnvelope{Success: true,
		Data: gen.ConnectionList{Items: items}}}, nil
}

// notStarted is the connection of a platform no replica has started yet.
func notStarted(a domain.Agent, platform string) domain.Connection {
	c := domain.Connection{AgentID: a.ID, Platform: platform, State: domain.ConnConnecting,
		Reason: "waiting for a replica to start the connection", Since: a.UpdatedAt}
	if a.Status == domain.StatusInactive {
		c.State, c.Reason = domain.ConnDisconnected, "the agent is inactive"
	}
	return c
}

func connection(c domain.Connection) gen.Connection {
	out := gen.Connection{Platform: gen.Platform(c.Platform), State: gen.ConnectionState(c.State), Reason: c.Reason,
		Since: timestamp(c.Since), MessagesIn: int(c.MessagesIn), MessagesOut: int(c.MessagesOut)}
	if c.BotID != "" {
		out.Account = &gen.ConnectionAccount{Id: c.BotID, Username: c.BotUsername}
	}
	if c.LastEventAt != nil {
		ts := timestamp(*c.LastEventAt)
		out.LastEventAt = &ts
	}
	return out
}
