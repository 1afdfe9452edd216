package domain

import "testing"

func TestAccountLimits(t *testing.T) {
	for _, c := range []struct {
		a    Account
		want Limits
	}{
		{Account{Tier: TierStandard, RPM: 999, EndpointMultiplier: 9}, Limits{RPM: 60, EndpointMultiplier: 1}},
		{Account{Tier: TierPro}, Limits{RPM: 300, EndpointMultiplier: 5}},
		{Account{Tier: TierEnterprise, RPM: 1000, EndpointMultiplier: 20}, Limits{RPM: 1000, EndpointMultiplier: 20}},
		{Account{Tier: TierEnterprise}, Limits{RPM: 60, EndpointMultiplier: 1}},
		{Account{Tier: "gold"}, Limits{RPM: 60, EndpointMultiplier: 1}},
	} {
		if got := c.a.Limits(); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.a, got, c.want)
		}
	}
}
