package validator_test

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidator(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Garden Admission Validator Suite")
}

func shoot(exts ...gardencorev1beta1.Extension) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "garden-p"}}
	s.Spec.Extensions = exts
	return s
}

func extension(extensionType, providerConfig string) gardencorev1beta1.Extension {
	return gardencorev1beta1.Extension{Type: extensionType, ProviderConfig: &runtime.RawExtension{Raw: []byte(providerConfig)}}
}
