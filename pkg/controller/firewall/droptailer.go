package firewall

import (
	"github.com/gardener/gardener/pkg/utils"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// droptailerObjects are the receiver of the logged packets in the shoot's
// firewall namespace (firewall-agent droptailer from image) and what the
// agent needs to reach it: the receiver may only review tokens; the agent
// may find the receiver's endpoints and read the CA bundle it verifies the
// receiver's certificate (tls) with; it sends its shoot credential.
func droptailerObjects(image string, tls *ReceiverTLS) []client.Object {
	ns, name := constants.ShootNamespace, constants.DropReceiverName
	labels := map[string]string{"app": name}
	tlsData := map[string][]byte{corev1.TLSCertKey: tls.CertPEM, corev1.TLSPrivateKeyKey: tls.KeyPEM}
	return []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: constants.DropReceiverTLSSecretName, Namespace: ns},
			Type:       corev1.SecretTypeTLS,
			Data:       tlsData,
		},
		// binaryData: a PEM's "-----" lines would read as YAML document
		// separators to a naive splitter of the ManagedResource's data.
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: constants.DropReceiverCAConfigMapName, Namespace: ns},
			BinaryData: map[string][]byte{constants.DropReceiverCAKey: tls.CABundle},
		},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: constants.DroptailerClusterRoleName},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: constants.DroptailerClusterRoleName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: constants.DroptailerClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					// A rotated certificate restarts the receiver.
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
						"checksum/secret-" + constants.DropReceiverTLSSecretName: utils.ComputeSecretChecksum(tlsData)}},
					Spec: corev1.PodSpec{
						ServiceAccountName: name,
						Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{
							Secret: &corev1.SecretVolumeSource{SecretName: constants.DropReceiverTLSSecretName, DefaultMode: ptr.To[int32](0o400)}}}},
						SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
						Containers: []corev1.Container{{
							Name:         "droptailer",
							Image:        image,
							Args:         []string{"droptailer", "--cert-dir=" + receiverCertDir},
							VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: receiverCertDir, ReadOnly: true}},
							Ports:        []corev1.ContainerPort{{Name: constants.DropReceiverPortName, ContainerPort: constants.DropReceiverPort}},
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
								Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							},
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(constants.DropReceiverPort)}}},
							Resources: corev1.ResourceRequirements{
								Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
								Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
							},
						}},
					},
				},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{
				Selector: labels,
				Ports: []corev1.ServicePort{{Name: constants.DropReceiverPortName, Port: constants.DropReceiverPort,
					TargetPort: intstr.FromString(constants.DropReceiverPortName), Protocol: corev1.ProtocolTCP}},
			},
		},
	}
}

// receiverCertDir is where the receiver reads its certificate.
const receiverCertDir = "/etc/firewall-drop/tls"

// agentReceiverCARule lets the agent read the receiver's CA bundle.
var agentReceiverCARule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
	ResourceNames: []string{constants.DropReceiverCAConfigMapName}, Verbs: []string{"get"}}

// agentEndpointSliceRule lets the agent find the receiver's endpoints.
var agentEndpointSliceRule = rbacv1.PolicyRule{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: []string{"list"}}
