package healthcheck

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultQPS bounds the health checks' requests per second to the seed's kube-apiserver: at the
// default period of 30 s, 1,500 Extensions are checked in time; more are checked as often as it
// allows (5,000 about every 100 s).
const DefaultQPS = 50

// budgetManager is the manager as Gardener's health check library sees it: reads through the
// manager's client (its cache, Secrets excepted), writes through a client with a request budget
// of its own. The library writes every Extension's status every sync period, changed or not; on
// the manager's client, thousands of Extensions would take the request budget the reconcilers of
// new and changed shoots share.
type budgetManager struct {
	manager.Manager
	client client.Client
	config *rest.Config
}

// GetClient returns the health checks' own client.
func (m *budgetManager) GetClient() client.Client { return m.client }

// GetConfig returns the rest config of that client, with its budget.
func (m *budgetManager) GetConfig() *rest.Config { return m.config }

// withBudget returns mgr with a client whose requests share one token bucket of qps per second
// (client-go's own limiter is per resource kind).
func withBudget(mgr manager.Manager, qps float32) (*budgetManager, error) {
	cfg := rest.CopyConfig(mgr.GetConfig())
	burst := max(1, int(qps))
	cfg.QPS, cfg.Burst = qps, burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	c, err := client.New(cfg, client.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		// Reads go through the manager's client: what it leaves out of the cache (Secrets), this
		// one does too.
		Cache: &client.CacheOptions{Reader: mgr.GetClient()},
	})
	if err != nil {
		return nil, err
	}
	return &budgetManager{Manager: mgr, client: c, config: cfg}, nil
}
