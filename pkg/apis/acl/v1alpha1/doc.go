// Package v1alpha1 holds the shoot-facing API of the extension type `acl`: the
// providerConfig a shoot owner writes into spec.extensions and the
// providerStatus the extension reports.
//
// The shape of ExtensionConfig is the one users of stackitcloud's
// gardener-extension-acl already write, so they can switch without editing
// their shoots:
//
//	providerConfig:
//	  rule: {action: ALLOW, type: remote_ip, cidrs: ["1.2.3.4/24"]}
package v1alpha1
