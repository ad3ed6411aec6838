package session

import (
	"fmt"
	"slices"
	"testing"

	"github.com/oncemq/oncemq/session/reason"
)

// A filter the caller refuses is not subscribed, gets no retained message, and SUBACK carries the
// caller's code (3.1.1: 0x80, its only refusal); Subscribe returns the codes it decided.
func TestSubscribeRefusedByCaller(t *testing.T) {
	for _, tt := range []struct {
		version byte
		want    []reason.Code
	}{
		{5, []reason.Code{reason.GrantedQoS1, reason.NotAuthorized, reason.TopicFilterInvalid, reason.GrantedQoS2}},
		{4, []reason.Code{reason.GrantedQoS1, reason.SubackFailure, reason.SubackFailure, reason.GrantedQoS2}},
	} {
		t.Run(map[byte]string{4: "3.1.1", 5: "5.0"}[tt.version], func(t *testing.T) {
			h := newHarness(t, Options{})
			h.publishLocal("secret", "s", 1, true)
			s, c := h.connectAs(ConnectRequest{ClientID: "c", ProtocolVersion: tt.version, CleanStart: true, ExpiryInterval: 3600})

			codes := h.b.Subscribe(s, c, 9, []SubscriptionRequest{
				{Filter: "open", QoS: 1},
				{Filter: "secret", QoS: 1, Refused: reason.NotAuthorized},
				{Filter: "bad/#/x", QoS: 1},
				{Filter: "other", QoS: 2, Refused: reason.GrantedQoS1}, // below 0x80: not a refusal
			})
			if !slices.Equal(codes, tt.want) {
				t.Errorf("Subscribe returned %v, want %v", codes, tt.want)
			}
			if got, want := h.j.records(), [][]string{{"put subscription c open qos=1", "put subscription c other qos=2"}}; !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("batches %q, want %q", got, want)
			}
			wantSuback := make([]byte, len(tt.want))
			for i, code := range tt.want {
				wantSuback[i] = byte(code)
			}
			h.commitExpect("SUBACK, and no retained message for the refused filter", "submit #1", "commit #1",
				fmt.Sprintf("c <- SUBACK id=9 %v", wantSuback))

			h.publishLocal("secret", "s2", 1, false)
			h.commitExpect("publish on the refused filter", "submit #1", "commit #1", "local <- done: <nil>")
		})
	}
}
