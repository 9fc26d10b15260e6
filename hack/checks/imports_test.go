package checks_test

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("check-imports.sh", func() {
	const module = "github.com/metal-firewall/gardener-extension-firewall"
	var root string

	script, err := filepath.Abs("../check-imports.sh")
	Expect(err).NotTo(HaveOccurred())

	// write puts a Go file of package name into dir, importing the given
	// packages of the module.
	write := func(dir, name string, imports ...string) {
		src := "package " + name + "\n"
		for _, imp := range imports {
			src += "import _ \"" + module + "/" + imp + "\"\n"
		}
		full := filepath.Join(root, dir)
		ExpectWithOffset(1, os.MkdirAll(full, 0o755)).To(Succeed())
		ExpectWithOffset(1, os.WriteFile(filepath.Join(full, name+".go"), []byte(src), 0o644)).To(Succeed())
	}
	run := func() (string, error) {
		cmd := exec.Command(script, root)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	BeforeEach(func() {
		root = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+module+"\n\ngo 1.26\n"), 0o644)).To(Succeed())
		write("pkg/constants", "constants")
		write("pkg/controller/acl", "acl", "pkg/constants")
		write("pkg/controller/manager/firewallmachine", "firewallmachine", "pkg/constants")
		write("pkg/webhook/envoyfilter", "envoyfilter", "pkg/constants")
		write("pkg/admission/validator", "validator", "pkg/constants")
		write("pkg/firewall/agent", "agent", "pkg/constants")
		write("pkg/apis/acl/v1alpha1", "v1alpha1")
		write("pkg/apis/firewall/v1alpha1", "v1alpha1")
		write("cmd/gardener-extension-firewall-admission", "main", "pkg/admission/validator")
		write("hack/tools/controller-registration", "main", "pkg/constants")
		write("cmd/firewall-agent", "main", "pkg/firewall/agent")
		write("pkg/utils/netns", "netns")
	})

	It("passes a module that keeps the layers", func() {
		out, err := run()
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("fails, not passes, when a package it checks does not build", func() {
		write("pkg/firewall/agent", "agent", "pkg/does/not/exist")
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("go list ./pkg/firewall/... ./cmd/firewall-agent/... failed"))
	})

	It("refuses a webhook that imports a controller", func() {
		write("pkg/webhook/envoyfilter", "envoyfilter", "pkg/controller/acl")
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("imports pkg/controller/acl"))
	})

	It("refuses the garden admission binary linking a controller through a helper", func() {
		write("pkg/admission/validator", "validator", "pkg/webhook/envoyfilter")
		write("pkg/webhook/envoyfilter", "envoyfilter", "pkg/controller/acl")
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("webhooks and admission import no controller"))
	})

	It("refuses the generic manager importing an extension controller", func() {
		write("pkg/controller/manager/firewallmachine", "firewallmachine", "pkg/controller/acl")
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("the generic firewall manager imports no extension package"))
	})

	It("refuses the agent importing the seed side", func() {
		write("pkg/firewall/agent", "agent", "pkg/webhook/envoyfilter")
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("the agent imports nothing of the seed side"))
	})

	It("refuses a package name used twice, but not the API version packages", func() {
		write("pkg/firewall/shoot", "shoot")
		write("pkg/admission/shoot", "shoot")
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("shoot: pkg/admission/shoot pkg/firewall/shoot"))
		Expect(out).NotTo(ContainSubstring("v1alpha1:"))
	})
})
