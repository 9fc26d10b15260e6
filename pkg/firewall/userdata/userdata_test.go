package userdata_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/userdata"
)

var _ = Describe("Remove", func() {
	var root string
	write := func(path, content string, mode os.FileMode) {
		GinkgoHelper()
		full := filepath.Join(root, path)
		Expect(os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		Expect(os.WriteFile(full, []byte(content), mode)).To(Succeed())
		Expect(os.Chmod(full, mode)).To(Succeed())
	}
	BeforeEach(func() { root = GinkgoT().TempDir() })

	It("removes the Ignition config, the metal-hammer's copy and the allocation's userdata field, and keeps the rest of the allocation", func() {
		write("config.ign", `{"ignition":{"version":"2.4.0"}}`, 0o644)
		write("etc/metal/userdata", "copy", 0o600)
		write("etc/metal/machine-allocation.yaml", "hostname: fw-a\nuserdata: eyJib290IjoidG9rZW4ifQ==\nnetworks:\n  - network: internet\n    vrf: 104009\n", 0o777)
		changed, err := userdata.Remove(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(changed).To(ConsistOf(filepath.Join(root, "config.ign"), filepath.Join(root, "etc/metal/userdata"), filepath.Join(root, "etc/metal/machine-allocation.yaml")))
		Expect(filepath.Join(root, "config.ign")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(root, "etc/metal/userdata")).NotTo(BeAnExistingFile())
		data, err := os.ReadFile(filepath.Join(root, "etc/metal/machine-allocation.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("hostname: fw-a\nnetworks:\n  - network: internet\n    vrf: 104009\n"))
		info, err := os.Stat(filepath.Join(root, "etc/metal/machine-allocation.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o777)), "the installer's file keeps its mode")

		By("a second boot finds nothing to remove")
		changed, err = userdata.Remove(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(changed).To(BeEmpty())
	})

	It("removes the copies it can and names the allocation it cannot read, without changing it", func() {
		write("config.ign", "{}", 0o600)
		write("etc/metal/machine-allocation.yaml", "- not\n- a mapping\n", 0o600)
		changed, err := userdata.Remove(root)
		Expect(err).To(MatchError(ContainSubstring("machine-allocation.yaml: not a YAML mapping")))
		Expect(changed).To(ConsistOf(filepath.Join(root, "config.ign")))
		data, err := os.ReadFile(filepath.Join(root, "etc/metal/machine-allocation.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("- not\n- a mapping\n"))
	})
})
