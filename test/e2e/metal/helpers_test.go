package metal_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// forwardIntoMachines lets every machine the local hardware boots reach the
// control planes as a firewall reaches their endpoints: each new machine's
// namespace gets the forwards as soon as it is recorded.
func forwardIntoMachines(ctx context.Context, stateDir string, cps ...*testenv.ControlPlane) {
	var (
		mu   sync.Mutex
		done = map[string]bool{}
	)
	go func() {
		for {
			recs, _ := framework.Machines(stateDir)
			for _, rec := range recs {
				mu.Lock()
				seen := done[rec.NetNS]
				done[rec.NetNS] = true
				mu.Unlock()
				if seen {
					continue
				}
				for _, cp := range cps {
					port, err := framework.PortOf(cp.Config.Host)
					if err == nil {
						err = roottest.ForwardLoopback(ctx, &netns.NS{Name: rec.NetNS}, port)
					}
					if err != nil {
						GinkgoWriter.Printf("forwarding %s into %s: %v\n", cp.Name, rec.NetNS, err)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// machineRecord is the local record of the metal machine id.
func machineRecord(stateDir, localID string) (framework.MachineRecord, bool) {
	recs, _ := framework.Machines(stateDir)
	for _, r := range recs {
		if r.ID == localID {
			return r, true
		}
	}
	return framework.MachineRecord{}, false
}
