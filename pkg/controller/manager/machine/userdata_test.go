package machine_test

import (
	"context"
	"encoding/base64"
	"strings"

	ignitionconfig "github.com/coreos/ignition/v2/config/v3_5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

var _ = Describe("Userdata", func() {
	fw := &firewallv1alpha1.Firewall{
		ObjectMeta: metav1.ObjectMeta{Name: "fw-0", Namespace: "shoot--p--s"},
		Spec: firewallv1alpha1.FirewallSpec{UserdataContents: []firewallv1alpha1.UserdataContent{
			{Path: "/etc/firewall-agent/config.yaml", Content: "name: fw-0\n", Mode: ptr.To[int32](0o644)},
			{Path: "/etc/firewall-agent/bootstrap.kubeconfig", SecretRef: &firewallv1alpha1.SecretKeyReference{Name: "bootstrap", Key: "kubeconfig"}},
		}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: "shoot--p--s"}, Data: map[string][]byte{"kubeconfig": []byte("secret-kubeconfig")}}

	It("reads secret-backed contents at provisioning time, 0600 unless told otherwise", func() {
		c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret).Build()
		files, err := ResolveUserdata(context.Background(), c, fw)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(2))
		Expect(files[0].Mode.Perm()).To(BeEquivalentTo(0o644))
		Expect(string(files[1].Content)).To(Equal("secret-kubeconfig"))
		Expect(files[1].Mode.Perm()).To(BeEquivalentTo(0o600))
	})

	It("names the entry and the secret when the secret is missing", func() {
		c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
		_, err := ResolveUserdata(context.Background(), c, fw)
		Expect(err).To(MatchError(ContainSubstring(`spec.userdataContents[1].secretRef: reading secret "bootstrap"`)))
	})

	It("renders an Ignition config that Ignition's own parser accepts", func() {
		raw, err := Ignition([]File{{Path: "/etc/firewall-agent/bootstrap.kubeconfig", Content: []byte("k: v\n"), Mode: 0o600}})
		Expect(err).NotTo(HaveOccurred())
		cfg, report, err := ignitionconfig.Parse(raw)
		Expect(err).NotTo(HaveOccurred(), report.String())
		Expect(report.IsFatal()).To(BeFalse())
		Expect(cfg.Storage.Files).To(HaveLen(1))
		f := cfg.Storage.Files[0]
		Expect(f.Path).To(Equal("/etc/firewall-agent/bootstrap.kubeconfig"))
		Expect(*f.Mode).To(Equal(0o600))
		data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(*f.Contents.Source, "data:;base64,"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("k: v\n"))

		By("enabling the boot step before the network")
		Expect(cfg.Systemd.Units).To(HaveLen(1))
		u := cfg.Systemd.Units[0]
		Expect(u.Name).To(Equal("firewall-agent-boot.service"))
		Expect(*u.Enabled).To(BeTrue())
		Expect(*u.Contents).To(ContainSubstring("\nBefore=network-pre.target shutdown.target\n"))
		Expect(*u.Contents).To(ContainSubstring("\nDefaultDependencies=no\n"))
		Expect(*u.Contents).To(ContainSubstring("\nExecStart=/usr/local/bin/firewall-agent boot --last-good-ruleset /var/lib/firewall-agent/last-good-ruleset.json\n"))
	})
})
