// Package acl is the controller of the extension type `acl`: it restricts who may reach a
// shoot's kube-apiserver through the seed's Istio ingress gateway.
//
// Per shoot it deploys, through a seed ManagedResource in the shoot namespace, an
// EnvoyFilter `acl-<shoot namespace>` into each Istio ingress namespace that serves the
// shoot's kube-apiserver (found through the `kube-apiserver*` Gateways' selectors) or its
// observability components (Plutono, Prometheus, Alertmanager, Vali, OpenTelemetry collector:
// Gateways in the shoot namespace for hosts on the seed's ingress domain, TLS terminated on
// the ingress gateway, each host with its own filter chain). Where
// Gardener's own per-shoot EnvoyFilter `<shoot namespace>-istio-tls-termination` exists and
// the mutating webhook has injected the policy into it, the shoot's own EnvoyFilter is not
// needed there and is left out, so the policy is evaluated once. Per ingress namespace it
// keeps one shared EnvoyFilter `acl-http-connect` (ManagedResource in that namespace) for the
// HTTP-CONNECT listeners, built from all acl Extensions.
package acl
