package server

import (
	"context"

	"github.com/agentd/agentd/gen"
)

// ListModelPrices answers the price table in force, whole: it is a few
// dozen models, and a console prices a reply with it without paging.
func (s *Server) ListModelPrices(context.Context, gen.ListModelPricesRequestObject) (gen.ListModelPricesResponseObject, error) {
	entries := s.cfg.Prices.Entries()
	items := make([]gen.ModelPriceEntry, len(entries))
	for i, e := range entries {
		items[i] = gen.ModelPriceEntry{Provider: gen.ModelProviderName(e.Provider), Model: e.Model,
			Input: e.Input, Output: e.Output, Source: gen.PriceSource(e.Source)}
	}
	return gen.ListModelPrices200JSONResponse{Body: gen.ModelPriceListEnvelope{Success: true,
		Data: gen.ModelPriceList{Items: items}}}, nil
}
