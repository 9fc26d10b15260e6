package credentials

import (
	"context"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// constants.AgentCSRClusterRoleName is the ClusterRole that lets an agent request and
// fetch its client certificates.
const CSRClusterRoleName = "gardener-extension-firewall:agent-csr"

// agentRBACName names the per-firewall Role, RoleBinding and ClusterRoleBinding.
func agentRBACName(namespace, name string) string {
	return firewallv1alpha1.AgentUserName(namespace, name)
}

// EnsureAgentRBAC grants the firewall's agent what it needs and nothing
// more: its own Firewall (read, status write), the named secrets (read), and
// creating CSRs with the firewallclient subresource that the approver's
// SubjectAccessReview asks for. Its bootstrap token gets the CSR part only.
func EnsureAgentRBAC(ctx context.Context, c client.Client, namespace, name string, secretNames []string) error {
	user := firewallv1alpha1.AgentUserName(namespace, name)

	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: constants.AgentCSRClusterRoleName}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, cr, func() error {
		cr.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
			{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/" + firewallv1alpha1.CSRSubresource}, Verbs: []string{"create"}},
		}
		return nil
	}); err != nil {
		return err
	}

	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, name)}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, crb, func() error {
		crb.Labels = map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: name}
		crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: constants.AgentCSRClusterRoleName}
		crb.Subjects = []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: firewallv1alpha1.BootstrapGroup(namespace, name)},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user},
		}
		return nil
	}); err != nil {
		return err
	}

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: agentRBACName(namespace, name), Namespace: namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error {
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
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		return nil
	})
	return err
}

// DeleteAgentRBAC removes the firewall's RBAC; with an empty name, that of
// every firewall of the namespace (the ClusterRoleBindings are found by label).
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
		_, fwName, err := firewallv1alpha1.ParseAgentUserName(crb.Name)
		if err != nil {
			continue
		}
		for _, obj := range []client.Object{
			&crb,
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
