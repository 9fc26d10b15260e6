package acl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/garbagecollector/references"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"google.golang.org/protobuf/proto"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
)

var _ = Describe("envoyFilters", func() {
	const namespace, name = "shoot--p--a", "extension-acl"
	var (
		ctx context.Context
		a   *actuator
	)
	filter := func(ns string) *istionetworkingv1alpha3.EnvoyFilter {
		return &istionetworkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Name: "acl-" + namespace, Namespace: ns}}
	}
	// secret is a data Secret as Gardener's managedresources writes it:
	// immutable, labelled for the garbage collector.
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{references.LabelKeyGarbageCollectable: references.LabelValueGarbageCollectable}}}
	}
	exists := func(obj client.Object) bool {
		return a.client.Get(ctx, client.ObjectKeyFromObject(obj), obj) == nil
	}

	BeforeEach(func() {
		ctx = context.Background()
		a = newTestActuator(Config{},
			// A data Secret of an earlier version of the ManagedResource, and one of another.
			secret("managedresource-"+name+"-0ld"), secret("managedresource-other-0ld"))
	})

	It("deploys one filter as JSON that gardener-resource-manager's decoder reads as one object", func() {
		ef, err := envoy.ShardEnvoyFilter("istio-ingress", map[string]string{"istio": "ingressgateway"}, envoy.Shard{Prefix: "shoot--p--",
			Shoots: []envoy.ShootPolicy{{Namespace: namespace, Action: "ALLOW", Type: "remote_ip", Allowed: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}}, envoy.HTTPConnectListeners)
		Expect(err).NotTo(HaveOccurred())
		raw, err := json.Marshal(ef)
		Expect(err).NotTo(HaveOccurred())
		Expect(newEnvoyFilters(a.client, namespace, name).deployOne(ctx, raw)).To(Succeed())

		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		Expect(mr.Spec.SecretRefs).To(HaveLen(1))
		data := &corev1.Secret{}
		Expect(a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: mr.Spec.SecretRefs[0].Name}, data)).To(Succeed())
		// As gardener-resource-manager's managedresource reconciler reads each key.
		var decoded []map[string]any
		for key, value := range data.Data {
			var reader io.Reader = bytes.NewReader(value)
			if strings.HasSuffix(key, resourcesv1alpha1.BrotliCompressionSuffix) {
				reader = brotli.NewReader(reader)
			}
			decoder := yaml.NewYAMLOrJSONDecoder(reader, 1024)
			for {
				var obj map[string]any
				err := decoder.Decode(&obj)
				if errors.Is(err, io.EOF) {
					break
				}
				Expect(err).NotTo(HaveOccurred())
				decoded = append(decoded, obj)
			}
		}
		Expect(decoded).To(HaveLen(1))
		u := &unstructured.Unstructured{Object: decoded[0]}
		Expect(u.GroupVersionKind()).To(Equal(istionetworkingv1alpha3.SchemeGroupVersion.WithKind("EnvoyFilter")))
		Expect(client.ObjectKeyFromObject(u)).To(Equal(client.ObjectKeyFromObject(ef)))
		back := &istionetworkingv1alpha3.EnvoyFilter{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, back)).To(Succeed())
		Expect(back.Spec.ConfigPatches).To(HaveLen(len(ef.Spec.ConfigPatches)))
		Expect(proto.Equal(&back.Spec, &ef.Spec)).To(BeTrue(), "the filter as rendered")
	})

	It("deploys the filters as one seed ManagedResource", func() {
		Expect(newEnvoyFilters(a.client, namespace, name, filter("istio-ingress"), filter("istio-ingress--zone-b")).Deploy(ctx)).To(Succeed())

		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		Expect(mr.Spec.Class).To(PointTo(Equal("seed")), "the seed's gardener-resource-manager applies it")
		objects, err := managedresources.GetObjects(ctx, a.client, namespace, name)
		Expect(err).NotTo(HaveOccurred())
		var keys []string
		for _, o := range objects {
			keys = append(keys, client.ObjectKeyFromObject(o).String())
		}
		Expect(keys).To(ConsistOf("istio-ingress/acl-"+namespace, "istio-ingress--zone-b/acl-"+namespace))

		By("no filters leave it empty, not gone")
		Expect(newEnvoyFilters(a.client, namespace, name).Deploy(ctx)).To(Succeed())
		objects, err = managedresources.GetObjects(ctx, a.client, namespace, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(objects).To(BeEmpty())
	})

	It("destroys the ManagedResource and every data Secret it had, and nothing else, reading no Secret's data", func() {
		var listed []string
		c := interceptor.NewClient(a.client.(client.WithWatch), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			listed = append(listed, fmt.Sprintf("%T", list))
			return c.List(ctx, list, opts...)
		}})
		filters := newEnvoyFilters(c, namespace, name, filter("istio-ingress"))
		Expect(filters.Deploy(ctx)).To(Succeed())
		Expect(filters.Destroy(ctx)).To(Succeed())
		Expect(listed).To(ContainElement("*v1.PartialObjectMetadataList"))
		Expect(listed).NotTo(ContainElement("*v1.SecretList"))
		Expect(filters.WaitCleanup(ctx)).To(Succeed())

		Expect(exists(&resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}})).To(BeFalse())
		secrets := &corev1.SecretList{}
		Expect(a.client.List(ctx, secrets, client.InNamespace(namespace))).To(Succeed())
		var names []string
		for _, s := range secrets.Items {
			names = append(names, s.Name)
		}
		Expect(names).To(ConsistOf("managedresource-other-0ld"))
	})

	It("waits for gardener-resource-manager to delete the filters", func() {
		mr := &resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Finalizers: []string{"resources.gardener.cloud/gardener-resource-manager"}}}
		Expect(a.client.Create(ctx, mr)).To(Succeed())
		filters := newEnvoyFilters(a.client, namespace, name)
		Expect(filters.Destroy(ctx)).To(Succeed())
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		Expect(filters.WaitCleanup(short)).NotTo(Succeed(), "the finalizer holds the ManagedResource")
	})
})
