package signature_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentd/agentd/signature"
)

// The example of the Standard Webhooks specification.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTime   = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesTheSpecification(t *testing.T) {
	got, err := signature.Sign(specSecret, specID, specTime, []byte(specBody))
	if err != nil || got != specSig {
		t.Fatalf("Sign = %q, %v; want %q", got, err, specSig)
	}
	if _, err := signature.Sign("whsec_not base64!", specID, specTime, nil); err == nil {
		t.Error("Sign accepted a secret that is not base64")
	}
}

func TestVerify(t *testing.T) {
	at := time.Unix(specTime, 0)
	header := func(sigs string) http.Header {
		h := http.Header{}
		h.Set(signature.HeaderID, specID)
		h.Set(signature.HeaderTimestamp, strconv.Itoa(specTime))
		h.Set(signature.HeaderSignature, sigs)
		return h
	}
	other := "whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	otherSig, err := signature.Sign(other, specID, specTime, []byte(specBody))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sigs string
		now  time.Time
		ok   bool
	}{
		{"valid", specSig, at, true},
		{"one of two, as after a rotation", otherSig + " " + specSig, at.Add(time.Minute), true},
		{"another secret's", otherSig, at, false},
		{"too old", specSig, at.Add(6 * time.Minute), false},
		{"too far ahead", specSig, at.Add(-6 * time.Minute), false},
	} {
		err := signature.Verify(specSecret, header(tc.sigs), []byte(specBody), tc.now, 5*time.Minute)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Verify = %v", tc.name, err)
		}
	}
	err = signature.Verify(specSecret, header(otherSig), []byte(specBody), at, time.Minute)
	if !errors.Is(err, signature.ErrInvalid) {
		t.Errorf("Verify with no matching signature = %v, want ErrInvalid", err)
	}
}
