package x

import "testing"

// TestCursorOfAnotherAccount: a cursor names its account; another
// account's is none, one from before accounts were named is kept.
func TestCursorOfAnotherAccount(t *testing.T) {
	old := cursor{Mentions: "100", DMs: "7"}
	if got := old.of("42"); got.Mentions != "100" || got.Account != "42" {
		t.Errorf("an unnamed cursor became %+v", got)
	}
	if got := (cursor{Account: "42", Mentions: "100"}).of("43"); got.Mentions != "" || got.Account != "43" {
		t.Errorf("another account's cursor became %+v", got)
	}
	if got := (cursor{Account: "42", Mentions: "100"}).of("42"); got.Mentions != "100" {
		t.Errorf("the same account's cursor became %+v", got)
	}
}
