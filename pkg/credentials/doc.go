// Package credentials holds the seed-side credentials of a firewall's agent.
//
// A firewall boots with a token of its own ServiceAccount in the extension's
// namespace, minted by the TokenRequest API: it expires within the hour, is
// audience-bound to the seed's kube-apiserver, and dies at once with its
// ServiceAccount, which is deleted as soon as the agent holds its client
// certificate. Unlike a bootstrap token (every one of which carries the group
// system:bootstrappers, bound to kubelet TLS bootstrap and node certificate
// auto-approval on every Gardener shoot, so on every ManagedSeed), its groups
// are system:serviceaccounts[:<namespace>], to which a Gardener seed grants
// nothing; BootIdentityHarmless proves that with SubjectAccessReviews before
// a token is minted. The RBAC lets it (and later the agent's certificate)
// create CSRs and read exactly its own one; the CSR approver approves only
// the firewall's own subject with the firewall's own key.
package credentials
