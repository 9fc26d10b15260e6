package main

import (
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Name is the name of the ControllerRegistration, the ControllerDeployment and the operator's
// Extension; gardenlet deploys the chart into namespace extension-<name>-<hash> of each seed.
const Name = "extension-firewall"

// Resources are the extension types with their place in Gardener's shoot flows.
//
// firewall: reconciled after the kube-apiserver, because the actuator reads the shoot's
// `gardener` kubeconfig Secret (written once the kube-apiserver is up) and a restore may hand a
// bootstrap kubeconfig to the firewall through the shoot; gardenlet still waits for it before
// the OperatingSystemConfigs and Workers, so the firewall exists before nodes need egress.
// Deleted and migrated before the kube-apiserver: gardenlet does that after the workers are gone
// (deletion) and the firewall work needs the seed only; a deleted firewall must be gone before
// the Infrastructure (its networks) is deleted. Not for workerless shoots: no nodes, no egress.
// Its reconcile returns only once the firewall forwards with its rules (up to
// --firewall-ready-timeout); gardenlet waits reconcileTimeout for it, a minute longer, so that
// the shoot reports the extension's own error, which names what is missing.
//
// acl: reconciled before the kube-apiserver, so that the policy is in place before the
// kube-apiserver is reachable through the Istio gateway; deleted and migrated after it, so that
// it stays for as long as the kube-apiserver is there. Workerless shoots have a kube-apiserver too.
func Resources() []gardencorev1beta1.ControllerResource {
	before, after := gardencorev1beta1.BeforeKubeAPIServer, gardencorev1beta1.AfterKubeAPIServer
	return []gardencorev1beta1.ControllerResource{
		{
			Kind: "Extension", Type: constants.FirewallExtensionType,
			Lifecycle:           &gardencorev1beta1.ControllerResourceLifecycle{Reconcile: &after, Delete: &before, Migrate: &before},
			ReconcileTimeout:    &metav1.Duration{Duration: FirewallReconcileTimeout},
			WorkerlessSupported: ptr.To(false),
		},
		{
			Kind: "Extension", Type: constants.ACLExtensionType,
			Lifecycle:           &gardencorev1beta1.ControllerResourceLifecycle{Reconcile: &before, Delete: &after, Migrate: &after},
			WorkerlessSupported: ptr.To(true),
		},
	}
}

// FirewallReconcileTimeout is how long gardenlet waits for the firewall Extension: the default
// --firewall-ready-timeout and a minute. An operator who raises the flag raises this with it.
const FirewallReconcileTimeout = constants.FirewallReadyTimeout + time.Minute

// Values are the chart values given in the registration. None: the one value without a default
// (seedAPIServer) differs per landscape, and a made-up URL would be worse than gardenlet's
// clear rendering error (see docs/operations/registration.md).
func Values() *apiextensionsv1.JSON { return nil }

// ControllerDeployment carries the chart.
func ControllerDeployment(rawChart []byte) *gardencorev1.ControllerDeployment {
	return &gardencorev1.ControllerDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1.SchemeGroupVersion.String(), Kind: "ControllerDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Helm:       &gardencorev1.HelmControllerDeployment{RawChart: rawChart, Values: Values()},
	}
}

// ControllerRegistration registers the types with the ControllerDeployment; gardenlet deploys it
// to a seed only when a shoot there uses one of them.
func ControllerRegistration() *gardencorev1beta1.ControllerRegistration {
	return &gardencorev1beta1.ControllerRegistration{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "ControllerRegistration"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{
			Resources: Resources(),
			Deployment: &gardencorev1beta1.ControllerRegistrationDeployment{
				Policy:         ptr.To(gardencorev1beta1.ControllerDeploymentPolicyOnDemand),
				DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: Name}},
			},
		},
	}
}

// OperatorExtension is the same registration for gardener-operator, which creates the
// ControllerRegistration and ControllerDeployment itself; it takes the chart from an OCI
// registry (ociRef), not inline. It also deploys the garden admission (admissionRef, the
// chart charts/gardener-extension-firewall-admission): its runtime part into the runtime
// cluster, its webhook registration into the virtual garden. The admission's serving
// certificate (values tls.*) is the operator's to add.
func OperatorExtension(ociRef, admissionRef string) *operatorv1alpha1.Extension {
	return &operatorv1alpha1.Extension{
		TypeMeta:   metav1.TypeMeta{APIVersion: operatorv1alpha1.SchemeGroupVersion.String(), Kind: "Extension"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec: operatorv1alpha1.ExtensionSpec{
			Resources: Resources(),
			Deployment: &operatorv1alpha1.Deployment{
				ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
					DeploymentSpec: operatorv1alpha1.DeploymentSpec{
						Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: &ociRef}},
					},
					Values: Values(),
					Policy: ptr.To(gardencorev1beta1.ControllerDeploymentPolicyOnDemand),
				},
				AdmissionDeployment: &operatorv1alpha1.AdmissionDeploymentSpec{
					RuntimeCluster: &operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: &admissionRef}}},
					VirtualCluster: &operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: &admissionRef}}},
				},
			},
		},
	}
}
