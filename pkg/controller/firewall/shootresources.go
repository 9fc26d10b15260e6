package firewall

import (
	"context"
	"fmt"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/crds"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ShootObjects are the objects of the shoot ManagedResource. The CRDs and
// the namespace are kept when the ManagedResource goes, so that the shoot
// owner's policies outlive disabling and re-enabling the extension. With a
// droptailerImage, the receiver of the logged packets comes along with its
// certificate and the CA bundle the agents verify it with (tls, required).
func ShootObjects(droptailerImage string, tls *ReceiverTLS) ([]client.Object, error) {
	if droptailerImage != "" && tls == nil {
		return nil, fmt.Errorf("the drop receiver %s needs its certificate", droptailerImage)
	}
	keep := map[string]string{resourcesv1alpha1.KeepObject: "true"}
	var objects []client.Object
	docs, err := crds.Shoot()
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("embedded shoot CRD: %w", err)
		}
		crd.Annotations = keep
		objects = append(objects, crd)
	}
	ns := constants.ShootNamespace
	agent := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}
	objects = append(objects,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: keep}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: constants.AgentShootRoleName, Namespace: ns},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{firewallv1alpha1.GroupName}, Resources: []string{"clusterwidenetworkpolicies"}, Verbs: []string{"get", "list", "watch"}},
				// The agent reports per policy whether it enforces it.
				{APIGroups: []string{firewallv1alpha1.GroupName}, Resources: []string{"clusterwidenetworkpolicies/status"}, Verbs: []string{"patch"}},
				// One monitor per firewall, named after it; the names change
				// with every rolling update, so no resourceNames.
				{APIGroups: []string{firewallv1alpha1.GroupName}, Resources: []string{"firewallmonitors"}, Verbs: []string{"get", "create", "patch"}},
				{APIGroups: []string{firewallv1alpha1.GroupName}, Resources: []string{"firewallmonitors/status"}, Verbs: []string{"patch"}},
				// Policies of shoots moved from metal-stack's firewall-controller
				// are enforced as they are, and told their state in their format.
				{APIGroups: []string{constants.MetalStackPolicyGroup}, Resources: []string{"clusterwidenetworkpolicies"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{constants.MetalStackPolicyGroup}, Resources: []string{"clusterwidenetworkpolicies/status"}, Verbs: []string{"patch"}},
				{APIGroups: []string{constants.MetalStackMonitorGroup}, Resources: []string{"firewallmonitors"}, Verbs: []string{"get", "create", "patch"}},
				// The drop receiver's address, and the CA to verify it with.
				agentEndpointSliceRule,
				agentReceiverCARule,
			},
		},
		metricsService(),
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: constants.AgentShootRoleName, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: constants.AgentShootRoleName},
			Subjects:   []rbacv1.Subject{agent},
		},
		// LoadBalancer Services live in any namespace; the agent only reads them.
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: constants.AgentShootClusterRoleName},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: constants.AgentShootClusterRoleName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: constants.AgentShootClusterRoleName},
			Subjects:   []rbacv1.Subject{agent},
		},
	)
	objects = append(objects, agentShootPolicy()...)
	if droptailerImage != "" {
		objects = append(objects, droptailerObjects(droptailerImage, tls)...)
	}
	return objects, nil
}

// shootResources serializes ShootObjects for the ManagedResource's secret.
func shootResources(droptailerImage string, tls *ReceiverTLS) (map[string][]byte, error) {
	objects, err := ShootObjects(droptailerImage, tls)
	if err != nil {
		return nil, err
	}
	registry := managedresources.NewRegistry(kubernetes.ShootScheme, kubernetes.ShootCodec, kubernetes.ShootSerializer)
	return registry.AddAllAndSerialize(objects...)
}

// reconcileShootResources writes the shoot ManagedResource.
func (a *actuator) reconcileShootResources(ctx context.Context, log logr.Logger, namespace string) error {
	var tls *ReceiverTLS
	if a.config.DroptailerImage != "" {
		var err error
		if tls, err = a.receiverTLS(ctx, log, namespace); err != nil {
			return err
		}
	}
	data, err := shootResources(a.config.DroptailerImage, tls)
	if err != nil {
		return err
	}
	if err := managedresources.CreateForShoot(ctx, a.client, namespace, constants.ShootManagedResourceName, constants.ManagedResourceOrigin, false, data); err != nil {
		return fmt.Errorf("shoot ManagedResource: %w", err)
	}
	return nil
}

// releaseShootResources removes the shoot ManagedResources from this seed
// and leaves their objects in the shoot: the agent keeps enforcing the
// policies, and Prometheus keeps scraping, while the shoot's control plane
// moves.
func (a *actuator) releaseShootResources(ctx context.Context, namespace string) error {
	for _, name := range []string{constants.ShootManagedResourceName, constants.MetricsManagedResourceName} {
		if err := managedresources.SetKeepObjects(ctx, a.client, namespace, name, true); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("keeping the shoot's objects of %s: %w", name, err)
		}
	}
	return a.deleteShootResources(ctx, namespace)
}

// deleteShootResources deletes the shoot ManagedResources; gardener-resource-
// manager removes their objects from the shoot unless they are to be kept.
// The metrics one goes with the last Firewall already; this catches a
// Firewall deleted without the seed's controllers running.
func (a *actuator) deleteShootResources(ctx context.Context, namespace string) error {
	for _, name := range []string{constants.ShootManagedResourceName, constants.MetricsManagedResourceName} {
		if err := managedresources.Delete(ctx, a.client, namespace, name, true); err != nil {
			return fmt.Errorf("deleting the shoot ManagedResource %s: %w", name, err)
		}
	}
	return nil
}
