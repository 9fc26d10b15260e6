package droplog_test

import (
	"encoding/json"
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

// BenchmarkEvent is the agent's work per logged packet: decode the headers,
// queue the event, take it in a batch of 500 and encode the batch.
func BenchmarkEvent(b *testing.B) {
	packet := ipv4("10.0.1.2", "203.0.113.2", 17, ports(40000, 20000))
	q := droplog.NewQueue(10000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e, err := droplog.Decode("drop forward default-deny", packet)
		if err != nil {
			b.Fatal(err)
		}
		q.Push(e)
		if i%500 == 499 {
			events, lost := q.Take(500)
			if _, err := json.Marshal(droplog.Batch{Firewall: "fw-0", Lost: lost, Events: events}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
