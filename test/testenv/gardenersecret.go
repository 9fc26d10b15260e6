package testenv

import (
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// GardenerSecret is the `gardener` Secret gardenlet keeps in a shoot
// namespace of the seed: the kubeconfig through which extensions reach the
// shoot (here the given control plane).
func GardenerSecret(namespace string, shoot *rest.Config) (*corev1.Secret, error) {
	kubeconfig, err := Kubeconfig(shoot)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: v1beta1constants.SecretNameGardener, Namespace: namespace},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}, nil
}
