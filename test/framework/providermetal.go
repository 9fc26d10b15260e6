package framework

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// WriteProviderFirewall writes firewall-controller-manager's FirewallDeployment as
// gardener-extension-provider-metal's Worker reconcile does
// (pkg/controller/worker/firewall_reconcile.go): create or update with the reconcile
// annotation, its webhook's label, FCM's finalizer and replicas 1. The objects' schema is
// FCM's CRD (upstream-crds).
func WriteProviderFirewall(ctx context.Context, c client.Client, namespace string) error {
	return WriteProviderFirewallOf(ctx, c, namespace, ProviderFirewallMachine{
		Size: "n1-medium-x86", Image: "firewall-ubuntu-3.0", Partition: "p1", Project: "proj", Networks: []string{"internet", "private-net"},
	})
}

// ProviderFirewallMachine is what provider-metal's FirewallDeployment asks the metal-api
// for: the InfrastructureConfig's firewall and the shoot's private network.
type ProviderFirewallMachine struct {
	Size, Image, Partition, Project string
	Networks                        []string
}

// WriteProviderFirewallOf is WriteProviderFirewall with the machine m.
func WriteProviderFirewallOf(ctx context.Context, c client.Client, namespace string, m ProviderFirewallMachine) error {
	deploy := &unstructured.Unstructured{}
	deploy.SetGroupVersionKind(constants.ProviderFirewallDeploymentGVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ProviderFirewallDeploymentName}, deploy)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return err
	}
	deploy.SetName(constants.ProviderFirewallDeploymentName)
	deploy.SetNamespace(namespace)
	annotations := deploy.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["firewall.metal-stack.io/reconcile"] = "true"
	deploy.SetAnnotations(annotations)
	deploy.SetLabels(map[string]string{"gardener-shoot-namespace": namespace})
	deploy.SetFinalizers([]string{"firewall.metal-stack.io/firewall-controller-manager"})
	networks := make([]any, 0, len(m.Networks))
	for _, n := range m.Networks {
		networks = append(networks, n)
	}
	for _, f := range []struct {
		value any
		path  []string
	}{
		{int64(1), []string{"spec", "replicas"}},
		{false, []string{"spec", "autoUpdate", "machineImage"}},
		{map[string]any{"cluster.metal-stack.io/id": "c1"}, []string{"spec", "selector"}},
		{map[string]any{"cluster.metal-stack.io/id": "c1"}, []string{"spec", "template", "metadata", "labels"}},
		// Field by field, as its CreateOrUpdate: what FCM's defaulting
		// webhook added to the template (the userdata) stays.
		{m.Size, []string{"spec", "template", "spec", "size"}},
		{m.Image, []string{"spec", "template", "spec", "image"}},
		{m.Partition, []string{"spec", "template", "spec", "partition"}},
		{m.Project, []string{"spec", "template", "spec", "project"}},
		{networks, []string{"spec", "template", "spec", "networks"}},
		// From provider-metal's ControllerConfig (firewall-controller and
		// nftables-exporter releases); FCM's validating webhook requires the controller's.
		{"v2.5.0", []string{"spec", "template", "spec", "controllerVersion"}},
		{"https://images.metal-stack.io/firewall-controller/v2.5.0/firewall-controller.gz", []string{"spec", "template", "spec", "controllerURL"}},
		{"v0.3.0", []string{"spec", "template", "spec", "nftablesExporterVersion"}},
		{"https://images.metal-stack.io/nftables-exporter/v0.3.0/nftables-exporter.tar.gz", []string{"spec", "template", "spec", "nftablesExporterURL"}},
		{false, []string{"spec", "template", "spec", "logAcceptedConnections"}},
	} {
		if err := unstructured.SetNestedField(deploy.Object, f.value, f.path...); err != nil {
			return err
		}
	}
	if create {
		return c.Create(ctx, deploy)
	}
	return c.Update(ctx, deploy)
}

// ReportProviderFirewall writes the status firewall-controller-manager writes for the
// FirewallDeployment: ready Ready replicas.
func ReportProviderFirewall(ctx context.Context, c client.Client, namespace string, ready int64) error {
	deploy, err := ProviderFirewall(ctx, c, namespace)
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedMap(deploy.Object, map[string]any{
		"conditions": []any{}, "observedRevision": int64(0), "progressingReplicas": int64(0),
		"readyReplicas": ready, "targetReplicas": ready, "unhealthyReplicas": int64(0),
	}, "status"); err != nil {
		return err
	}
	return c.Status().Update(ctx, deploy)
}

// ProviderFirewall reads firewall-controller-manager's FirewallDeployment.
func ProviderFirewall(ctx context.Context, c client.Reader, namespace string) (*unstructured.Unstructured, error) {
	deploy := &unstructured.Unstructured{}
	deploy.SetGroupVersionKind(constants.ProviderFirewallDeploymentGVK)
	return deploy, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ProviderFirewallDeploymentName}, deploy)
}

// ProviderFirewallReplicas is its spec.replicas.
func ProviderFirewallReplicas(ctx context.Context, c client.Reader, namespace string) (int64, error) {
	deploy, err := ProviderFirewall(ctx, c, namespace)
	if err != nil {
		return 0, err
	}
	r, _, err := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	return r, err
}
