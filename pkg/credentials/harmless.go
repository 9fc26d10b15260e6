package credentials

import (
	"context"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dangerous is what no firewall boot identity may be allowed anywhere in the
// seed: becoming a node (the CSR auto-approval of kubelet client
// certificates, the attack a bootstrap token enabled on every ManagedSeed),
// approving or signing certificates, acting as someone else, granting itself
// more, minting tokens, reading secrets, running or entering pods, reaching
// nodes, changing admission, or anything at all.
//
// Each question is the widest one a single review can ask: a review of a
// named object is also allowed by the rules without resourceNames, and one in
// a namespace also by the cluster-wide bindings, so the names below are the
// ones a grant limited by name would aim at, and namespaced resources are
// asked about in the boot namespace or kube-system, not cluster-wide. Fewer
// reviews per boot token (35) bound how fast a seed's firewalls get theirs.
func dangerous(bootNamespace string) []authorizationv1.ResourceAttributes {
	const rbac, apps, admission = "rbac.authorization.k8s.io", "apps", "admissionregistration.k8s.io"
	system := metav1.NamespaceSystem
	return []authorizationv1.ResourceAttributes{
		{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: "nodeclient", Verb: "create"},
		{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: "selfnodeclient", Verb: "create"},
		{Group: certificatesv1.GroupName, Resource: "signers", Name: certificatesv1.KubeAPIServerClientKubeletSignerName, Verb: "approve"},
		{Group: certificatesv1.GroupName, Resource: "signers", Name: certificatesv1.KubeAPIServerClientSignerName, Verb: "approve"},
		{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: "approval", Verb: "update"},
		// Acting as someone else.
		{Resource: "users", Name: "system:admin", Verb: "impersonate"},
		{Resource: "groups", Name: "system:masters", Verb: "impersonate"},
		{Resource: "serviceaccounts", Namespace: system, Verb: "impersonate"},
		{Group: "authentication.k8s.io", Resource: "uids", Verb: "impersonate"},
		{Group: "authentication.k8s.io", Resource: "userextras", Verb: "impersonate"},
		// Granting itself more.
		{Group: rbac, Resource: "clusterroles", Verb: "escalate"},
		{Group: rbac, Resource: "clusterroles", Verb: "bind"},
		{Group: rbac, Resource: "roles", Namespace: system, Verb: "escalate"},
		{Group: rbac, Resource: "roles", Namespace: system, Verb: "bind"},
		{Group: rbac, Resource: "clusterrolebindings", Verb: "create"},
		{Group: rbac, Resource: "rolebindings", Namespace: system, Verb: "create"},
		// Tokens and secrets.
		{Resource: "serviceaccounts", Subresource: "token", Namespace: bootNamespace, Verb: "create"},
		{Resource: "secrets", Namespace: bootNamespace, Verb: "get"},
		{Resource: "secrets", Namespace: system, Verb: "get"},
		{Resource: "secrets", Namespace: system, Verb: "list"},
		{Resource: "secrets", Namespace: system, Verb: "watch"},
		// Running or entering pods, reaching nodes.
		{Resource: "pods", Namespace: system, Verb: "create"},
		{Resource: "pods", Subresource: "exec", Namespace: system, Verb: "create"},
		{Resource: "pods", Subresource: "attach", Namespace: system, Verb: "create"},
		{Resource: "pods", Subresource: "ephemeralcontainers", Namespace: system, Verb: "patch"},
		{Group: apps, Resource: "deployments", Namespace: system, Verb: "create"},
		{Group: apps, Resource: "daemonsets", Namespace: system, Verb: "create"},
		{Resource: "nodes", Verb: "get"},
		{Resource: "nodes", Subresource: "proxy", Verb: "get"},
		{Resource: "nodes", Verb: "patch"},
		// Changing what admission lets through.
		{Group: admission, Resource: "mutatingwebhookconfigurations", Verb: "create"},
		{Group: admission, Resource: "validatingwebhookconfigurations", Verb: "update"},
		{Group: admission, Resource: "validatingadmissionpolicies", Verb: "update"},
		{Group: admission, Resource: "validatingadmissionpolicybindings", Verb: "delete"},
		{Group: "*", Resource: "*", Verb: "*"},
	}
}

// BootIdentityHarmless proves, with one SubjectAccessReview per permission,
// that the boot identity of namespace/name (its user and every group it
// carries) holds none of the dangerous permissions in this seed. It returns
// the ones it holds; a caller must not mint a token then, and must say why.
func BootIdentityHarmless(ctx context.Context, c client.Client, bootNamespace, namespace, name string) ([]string, error) {
	user := BootUser(bootNamespace, namespace, name)
	groups := append(BootGroups(bootNamespace), "system:authenticated")
	return review(ctx, c, user, groups, dangerous(bootNamespace), "the boot identity")
}

func describe(a authorizationv1.ResourceAttributes) string {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Group != "" {
		resource += "." + a.Group
	}
	var where []string
	if a.Namespace != "" {
		where = append(where, "in "+a.Namespace)
	}
	if a.Name != "" {
		where = append(where, "named "+a.Name)
	}
	return strings.TrimSpace(a.Verb + " " + resource + " " + strings.Join(where, " "))
}
