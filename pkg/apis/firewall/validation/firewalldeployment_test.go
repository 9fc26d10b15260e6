package validation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

var _ = Describe("ValidateFirewallDeployment", func() {
	var d *firewallv1alpha1.FirewallDeployment

	BeforeEach(func() {
		d = &firewallv1alpha1.FirewallDeployment{Spec: firewallv1alpha1.FirewallDeploymentSpec{
			Strategy: firewallv1alpha1.StrategyRollingUpdate,
			Replicas: 1,
			Selector: map[string]string{"firewall": "shoot"},
			Template: firewallv1alpha1.FirewallTemplateSpec{
				Metadata: firewallv1alpha1.TemplateMetadata{Labels: map[string]string{"firewall": "shoot", "extra": "x"}},
				Spec:     validSpec(),
			},
		}}
	})

	It("accepts a valid deployment", func() {
		Expect(ValidateFirewallDeployment(d)).To(BeEmpty())
	})

	It("refuses an unknown strategy", func() {
		d.Spec.Strategy = "BlueGreen"
		Expect(ValidateFirewallDeployment(d)).To(ConsistOf(fieldErr(field.ErrorTypeNotSupported, "spec.strategy", firewallv1alpha1.UpdateStrategy("BlueGreen"))))
	})

	It("refuses an empty selector, which would adopt every Firewall", func() {
		d.Spec.Selector = nil
		Expect(ValidateFirewallDeployment(d)).To(ConsistOf(fieldErr(field.ErrorTypeRequired, "spec.selector", nil)))
	})

	It("refuses a selector that does not match the template", func() {
		d.Spec.Template.Metadata.Labels = map[string]string{"firewall": "other"}
		Expect(ValidateFirewallDeployment(d)).To(ConsistOf(fieldErr(field.ErrorTypeInvalid, "spec.template.metadata.labels", nil)))
	})

	It("validates the template's Firewall spec under its own path", func() {
		d.Spec.Template.Spec.Partition = ""
		Expect(ValidateFirewallDeployment(d)).To(ConsistOf(fieldErr(field.ErrorTypeRequired, "spec.template.spec.partition", nil)))
	})

	It("validates sets the same way", func() {
		s := &firewallv1alpha1.FirewallSet{Spec: firewallv1alpha1.FirewallSetSpec{Replicas: -1, Selector: d.Spec.Selector, Template: d.Spec.Template}}
		Expect(ValidateFirewallSet(s)).To(ConsistOf(fieldErr(field.ErrorTypeInvalid, "spec.replicas", int32(-1))))
		s.Spec.Replicas = 1
		s.Spec.HealthTimeout = &metav1.Duration{Duration: 0}
		Expect(ValidateFirewallSet(s)).To(ConsistOf(fieldErr(field.ErrorTypeInvalid, "spec.healthTimeout", "0s")))
	})

	It("bounds replicas and distances", func() {
		d.Spec.Replicas = firewallv1alpha1.MaxReplicas
		Expect(ValidateFirewallDeployment(d)).To(BeEmpty())
		d.Spec.Replicas = firewallv1alpha1.MaxReplicas + 1
		Expect(ValidateFirewallDeployment(d)).To(ConsistOf(fieldErr(field.ErrorTypeInvalid, "spec.replicas", int32(5))))
		s := &firewallv1alpha1.FirewallSet{Spec: firewallv1alpha1.FirewallSetSpec{Replicas: 1, Selector: d.Spec.Selector, Template: d.Spec.Template,
			Distance: firewallv1alpha1.LongestDistance}}
		Expect(ValidateFirewallSet(s)).To(BeEmpty())
		s.Spec.Distance = firewallv1alpha1.LongestDistance + 1
		Expect(ValidateFirewallSet(s)).To(ConsistOf(fieldErr(field.ErrorTypeInvalid, "spec.distance", int32(9))))
		fw := &firewallv1alpha1.Firewall{Spec: d.Spec.Template.Spec}
		fw.Spec.Distance = -1
		Expect(ValidateFirewall(fw)).To(ConsistOf(fieldErr(field.ErrorTypeInvalid, "spec.distance", int32(-1))))
	})

	It("accepts timeouts of seconds, which the manager's tests use, and refuses none or more than a day", func() {
		d.Spec.CreateTimeout = &metav1.Duration{Duration: time.Second}
		d.Spec.HealthTimeout = &metav1.Duration{Duration: 24 * time.Hour}
		Expect(ValidateFirewallDeployment(d)).To(BeEmpty())
		d.Spec.CreateTimeout.Duration = -time.Minute
		d.Spec.HealthTimeout.Duration = 25 * time.Hour
		Expect(ValidateFirewallDeployment(d)).To(ConsistOf(
			fieldErr(field.ErrorTypeInvalid, "spec.createTimeout", "-1m0s"),
			fieldErr(field.ErrorTypeInvalid, "spec.healthTimeout", "25h0m0s")))
	})
})
