package credentials

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dangerous is what no firewall boot identity may be allowed anywhere in the
// seed: becoming a node (the CSR auto-approval of kubelet client
// certificates, the attack a bootstrap token enabled on every ManagedSeed),
// approving or signing certificates, minting tokens, reading secrets,
// starting pods, or anything at all.
func dangerous(bootNamespace string) []authorizationv1.ResourceAttributes {
	return []authorizationv1.ResourceAttributes{
		{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: "nodeclient", Verb: "create"},
		{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: "selfnodeclient", Verb: "create"},
		{Group: certificatesv1.GroupName, Resource: "signers", Name: certificatesv1.KubeAPIServerClientKubeletSignerName, Verb: "approve"},
		{Group: certificatesv1.GroupName, Resource: "signers", Name: certificatesv1.KubeAPIServerClientSignerName, Verb: "approve"},
		{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: "approval", Verb: "update"},
		{Resource: "serviceaccounts", Subresource: "token", Namespace: bootNamespace, Verb: "create"},
		{Resource: "secrets", Namespace: bootNamespace, Verb: "get"},
		{Resource: "secrets", Namespace: metav1.NamespaceSystem, Verb: "list"},
		{Resource: "pods", Namespace: metav1.NamespaceSystem, Verb: "create"},
		{Resource: "nodes", Verb: "get"},
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
	var held []string
	for _, attrs := range dangerous(bootNamespace) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups, ResourceAttributes: attrs.DeepCopy(),
		}}
		if err := c.Create(ctx, sar); err != nil {
			return nil, fmt.Errorf("SubjectAccessReview for the boot identity: %w", err)
		}
		if sar.Status.Allowed {
			held = append(held, describe(attrs))
		}
	}
	return held, nil
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
