package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// TestEveryStoreCodeIsMapped: the error table has a row for every code the
// store can return, so a new code cannot reach a client unmapped.
func TestEveryStoreCodeIsMapped(t *testing.T) {
	for _, code := range domain.Codes {
		if _, ok := storeErrors[code]; !ok {
			t.Errorf("store code %q has no row in storeErrors", code)
		}
	}
	if len(storeErrors) != len(domain.Codes) {
		t.Errorf("storeErrors has %d rows for %d codes", len(storeErrors), len(domain.Codes))
	}
}

// TestStoreErrorsMapByResource: a not-found says what is missing, wrapped
// as the store wraps it.
func TestStoreErrorsMapByResource(t *testing.T) {
	for _, c := range []struct {
		err  error
		code gen.ErrorCode
	}{
		{domain.ErrNotFound, gen.AGENTNOTFOUND},
		{domain.ErrConversationNotFound, gen.CONVERSATIONNOTFOUND},
		{domain.ErrWebhookNotFound, gen.WEBHOOKNOTFOUND},
		{domain.ErrDeliveryNotFound, gen.DELIVERYNOTFOUND},
		{domain.ErrDeleteProtected, gen.DELETEPROTECTED},
		{domain.ErrQuotaExceeded, gen.INSUFFICIENTQUOTA},
	} {
		ae, ok := asAPIError(fmt.Errorf("store: op: %w", c.err))
		if !ok || ae.Code != c.code {
			t.Errorf("%v: %+v, want %s", c.err, ae, c.code)
		}
	}
	if _, ok := asAPIError(fmt.Errorf("store: op: %w", domain.ErrLeaseLost)); ok {
		t.Error("a lease lost reached the contract; it is internal")
	}
	if ae, _ := asAPIError(&domain.Error{Code: domain.CodeInvalid, Field: "events", Reason: "is empty"}); ae.Status != http.StatusBadRequest || ae.Details["field"] != "events" {
		t.Errorf("invalid field: %+v", ae)
	}
}
