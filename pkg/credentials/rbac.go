package credentials

import (
	"context"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// AgentCSRRules are the rules of the shared ClusterRole every agent is bound
// to: creating CSRs (create cannot be limited to a name) and the
// firewallclient subresource the approver's SubjectAccessReview asks for. The
// chart ships the ClusterRole with exactly these rules.
func AgentCSRRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create"}},
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/" + firewallv1alpha1.CSRSubresource}, Verbs: []string{"create"}},
	}
}

// agentRBACName names the per-firewall RBAC objects.
func agentRBACName(namespace, name string) string {
	return firewallv1alpha1.AgentUserName(namespace, name)
}

// ownCSRName names the per-firewall ClusterRole and binding for its own CSR.
func ownCSRName(namespace, name string) string {
	return agentRBACName(namespace, name) + ":csr"
}

// EnsureAgentRBAC grants the firewall's agent what it needs and nothing
// more. Its boot ServiceAccount (in bootNamespace) and its certificate's
// user may create CSRs and read, watch and replace exactly the one named
// firewallv1alpha1.CSRName, never another firewall's; the certificate's user
// also reads its own Firewall, writes its status and reads the named secrets.
func EnsureAgentRBAC(ctx context.Context, c client.Client, bootNamespace, namespace, name string, secretNames []string) error {
	labels := map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: name}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: firewallv1alpha1.AgentUserName(namespace, name)}
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.ServiceAccountKind, Name: BootServiceAccountName(namespace, name), Namespace: bootNamespace},
		user,
	}

	sharedRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: constants.AgentCSRClusterRoleName}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, sharedRole, func() error {
		sharedRole.Rules = AgentCSRRules()
		return nil
	}); err != nil {
		return err
	}
	// The firewall's own ClusterRole comes between its two bindings: the one to
	// the shared ClusterRole owns it, so that the garbage collector removes it
	// with that binding and the extension needs neither update nor delete on
	// ClusterRoles (which would reach every role of the seed), only create; and
	// the binding to it can only be written once it exists (the API server
	// checks that the writer holds what it binds).
	shared := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, name)}}
	if err := ensureBinding(ctx, c, shared, constants.AgentCSRClusterRoleName, labels, subjects); err != nil {
		return err
	}
	own := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:   ownCSRName(namespace, name),
			Labels: labels,
			// No blockOwnerDeletion: it would need update on the bindings' finalizers.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding", Name: shared.Name, UID: shared.UID,
			}},
		},
		// list and watch with this name only work with a metadata.name field
		// selector, which is how client-go waits for a certificate.
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"},
			ResourceNames: []string{firewallv1alpha1.CSRName(namespace, name)}, Verbs: []string{"get", "list", "watch", "delete"},
		}},
	}
	if err := c.Create(ctx, own); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := ensureBinding(ctx, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: own.Name}}, own.Name, labels, subjects); err != nil {
		return err
	}

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, name), Namespace: namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error {
		role.Labels = labels
		role.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{firewallv1alpha1.GroupName}, Resources: []string{"firewalls"}, ResourceNames: []string{name}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{firewallv1alpha1.GroupName}, Resources: []string{"firewalls/status"}, ResourceNames: []string{name}, Verbs: []string{"get", "update", "patch"}},
		}
		if len(secretNames) > 0 {
			names := slices.Clone(secretNames)
			slices.Sort(names)
			role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get", "list", "watch"}})
		}
		return nil
	}); err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, name), Namespace: namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, rb, func() error {
		rb.Labels = labels
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
		// The boot identity reads nothing here: it only gets its certificate.
		rb.Subjects = []rbacv1.Subject{user}
		return nil
	})
	return err
}

// DeleteAgentRBAC removes the firewall's RBAC; with an empty name, that of
// every firewall of the namespace (found by the labels of its bindings).
func DeleteAgentRBAC(ctx context.Context, c client.Client, namespace, name string) error {
	selector := client.MatchingLabels{constants.LabelFirewallNamespace: namespace}
	if name != "" {
		selector[constants.LabelFirewallName] = name
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := c.List(ctx, crbs, selector); err != nil {
		return err
	}
	for _, crb := range crbs.Items {
		fwName := crb.Labels[constants.LabelFirewallName]
		if fwName == "" {
			continue
		}
		for _, obj := range []client.Object{
			// The firewall's own ClusterRole goes with its binding (owner reference).
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crb.Name}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, fwName), Namespace: namespace}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, fwName), Namespace: namespace}},
		} {
			if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

func ensureBinding(ctx context.Context, c client.Client, crb *rbacv1.ClusterRoleBinding, role string, labels map[string]string, subjects []rbacv1.Subject) error {
	_, err := controllerutil.CreateOrUpdate(ctx, c, crb, func() error {
		crb.Labels = labels
		crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
		crb.Subjects = subjects
		return nil
	})
	return err
}
