package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSProxy configures the firewall agent's DNS proxy, which enforces the policies'
// toFQDNs: the nodes' DNS queries to Upstreams are redirected to it, it asks
// the upstream and, before it answers, allows the answer's addresses for
// every selector that matches. Without it, toFQDNs allow nothing.
type DNSProxy struct {
	// Upstreams are the resolvers the nodes ask, IPv4 or IPv6 addresses
	// (the partition's DNS servers). Queries from the internal prefixes to
	// them, UDP and TCP port 53, are redirected to the proxy, which forwards
	// them to the same resolvers.
	Upstreams []string `json:"upstreams"`
	// Port is the port the proxy listens on, on the firewall; default 10053.
	// Only redirected queries reach it.
	// +optional
	Port int32 `json:"port,omitempty"`
	// MinTTL is the least time an answer's addresses stay allowed, however
	// short its TTL; default 60s.
	// +optional
	MinTTL *metav1.Duration `json:"minTTL,omitempty"`
	// Grace is added to every TTL, so that a client that connects just as
	// its cached answer expires still gets through; default 60s.
	// +optional
	Grace *metav1.Duration `json:"grace,omitempty"`
	// MaxAddressesPerName bounds the addresses allowed for one name and
	// selector; default 64.
	// +optional
	MaxAddressesPerName int32 `json:"maxAddressesPerName,omitempty"`
	// MaxNamesPerSelector bounds the names with allowed addresses per
	// selector (a pattern matches many); default 1024.
	// +optional
	MaxNamesPerSelector int32 `json:"maxNamesPerSelector,omitempty"`
	// MaxSelectors bounds the distinct selectors enforced; the others are
	// reported as not enforced; default 10000.
	// +optional
	MaxSelectors int32 `json:"maxSelectors,omitempty"`
	// MaxAddresses bounds the allowed addresses of all selectors together,
	// and so the memory the proxy and the kernel's sets take; default 200000.
	// +optional
	MaxAddresses int32 `json:"maxAddresses,omitempty"`
}

// Defaults of DNSProxy.
const (
	DefaultDNSPort             = 10053
	DefaultDNSMinTTL           = 60 * time.Second
	DefaultDNSGrace            = 60 * time.Second
	DefaultMaxAddressesPerName = 64
	DefaultMaxNamesPerSelector = 1024
	DefaultMaxSelectors        = 10000
	DefaultMaxAddresses        = 200000
)

// ListenPort is Port or its default.
func (d *DNSProxy) ListenPort() uint16 { return uint16(orDefault(d.Port, DefaultDNSPort)) }

// TTLFloor is MinTTL or its default.
func (d *DNSProxy) TTLFloor() time.Duration { return durationOr(d.MinTTL, DefaultDNSMinTTL) }

// GracePeriod is Grace or its default.
func (d *DNSProxy) GracePeriod() time.Duration { return durationOr(d.Grace, DefaultDNSGrace) }

// AddressesPerName is MaxAddressesPerName or its default.
func (d *DNSProxy) AddressesPerName() int {
	return int(orDefault(d.MaxAddressesPerName, DefaultMaxAddressesPerName))
}

// NamesPerSelector is MaxNamesPerSelector or its default.
func (d *DNSProxy) NamesPerSelector() int {
	return int(orDefault(d.MaxNamesPerSelector, DefaultMaxNamesPerSelector))
}

// SelectorLimit is MaxSelectors or its default.
func (d *DNSProxy) SelectorLimit() int { return int(orDefault(d.MaxSelectors, DefaultMaxSelectors)) }

// AddressLimit is MaxAddresses or its default.
func (d *DNSProxy) AddressLimit() int { return int(orDefault(d.MaxAddresses, DefaultMaxAddresses)) }

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}
