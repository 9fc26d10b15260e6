// Package checks_test runs the repository's shell checks (hack/*.sh) against
// planted repositories, so that a check that silently stops catching what it
// is for fails here.
package checks_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("check-tracked-files.sh", func() {
	var repo string

	script, err := filepath.Abs("../check-tracked-files.sh")
	Expect(err).NotTo(HaveOccurred())

	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), string(out))
	}
	plant := func(path string, content []byte, mode os.FileMode) {
		full := filepath.Join(repo, path)
		ExpectWithOffset(1, os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		ExpectWithOffset(1, os.WriteFile(full, content, mode)).To(Succeed())
		git("add", path)
	}
	run := func() (string, error) {
		cmd := exec.Command(script, repo)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	BeforeEach(func() {
		repo = GinkgoT().TempDir()
		git("init", "-q")
		plant("README.md", []byte("# r\n"), 0o644)
		plant("hack/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	})

	It("passes a repository of sources and scripts", func() {
		out, err := run()
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("refuses a built ELF binary, however small", func() {
		plant("demo", append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 64)...), 0o755)
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("demo is an executable binary"))
	})

	It("refuses a Windows and a Mach-O binary, also without the executable bit", func() {
		plant("tool.exe", append([]byte("MZ"), make([]byte, 64)...), 0o644)
		plant("tool-darwin", append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 64)...), 0o644)
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("tool.exe is an executable binary"))
		Expect(out).To(ContainSubstring("tool-darwin is an executable binary"))
	})

	It("refuses an executable file that is no script", func() {
		plant("blob", []byte("data\n"), 0o755)
		out, err := run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("blob is marked executable but is no script"))
	})

	It("refuses a file over 1 MiB unless it is a generated CRD or the registration", func() {
		big := bytes.Repeat([]byte("a: b\n"), 220<<10) // 1.1 MiB
		plant("upstream-crds/crd-big.yaml", big, 0o644)
		plant("example/controller-registration.yaml", big, 0o644)
		out, err := run()
		Expect(err).NotTo(HaveOccurred(), out)

		plant("test/testdata/dump.yaml", big, 0o644)
		out, err = run()
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("test/testdata/dump.yaml is 1126400 bytes, over the 1 MiB limit"))
	})
})
