package v1alpha1

import (
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// DNS configures the agent's DNS proxy, which enforces the policies'
// toFQDNs. It is the firewall API's DNSProxy, which a shoot's providerConfig
// sets (dns) and the extension copies into the agent's config.
type DNS = fwv1alpha1.DNSProxy

// Defaults of DNS.
const (
	DefaultDNSPort             = fwv1alpha1.DefaultDNSPort
	DefaultDNSMinTTL           = fwv1alpha1.DefaultDNSMinTTL
	DefaultDNSGrace            = fwv1alpha1.DefaultDNSGrace
	DefaultMaxAddressesPerName = fwv1alpha1.DefaultMaxAddressesPerName
	DefaultMaxNamesPerSelector = fwv1alpha1.DefaultMaxNamesPerSelector
	DefaultMaxSelectors        = fwv1alpha1.DefaultMaxSelectors
	DefaultMaxAddresses        = fwv1alpha1.DefaultMaxAddresses
)
