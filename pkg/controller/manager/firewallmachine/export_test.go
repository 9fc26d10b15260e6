package firewallmachine

import "sigs.k8s.io/controller-runtime/pkg/client"

// SetCredentialsClient sets the client for tokens and RBAC, which
// AddToManager builds uncached from the manager's config.
func (r *Reconciler) SetCredentialsClient(c client.Client) { r.credentials = c }
