package store

import (
	"context"

	"github.com/agentd/agentd/domain"
)

// CountConnections counts the platform connections of every account by
// platform and state, for the metrics.
func (s Connections) CountConnections(ctx context.Context) ([]domain.ConnectionCount, error) {
	var rows []struct {
		Platform string
		State    string
		N        int64
	}
	err := s.read(ctx).Model(&connectionRow{}).Select("platform, state, COUNT(*) AS n").
		Group("platform, state").Order("platform, state").Scan(&rows).Error
	if err != nil {
		return nil, wrap("count connections", err)
	}
	out := make([]domain.ConnectionCount, len(rows))
	for i, r := range rows {
		out[i] = domain.ConnectionCount{Platform: r.Platform, State: domain.ConnState(r.State), N: r.N}
	}
	return out, nil
}

// CountPendingDeliveries counts the webhook deliveries of every account
// still to be sent (not yet succeeded nor given up), for the metrics.
func (s Webhooks) CountPendingDeliveries(ctx context.Context) (int64, error) {
	var n int64
	if err := s.read(ctx).Model(&deliveryRow{}).Where("status = ?", string(domain.DeliveryPending)).Count(&n).Error; err != nil {
		return 0, wrap("count pending deliveries", err)
	}
	return n, nil
}
