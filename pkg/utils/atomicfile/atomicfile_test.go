package atomicfile_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

var _ = Describe("Write", func() {
	var dir, path string
	BeforeEach(func() {
		dir = filepath.Join(GinkgoT().TempDir(), "state")
		path = filepath.Join(dir, "secret")
	})

	mode := func(p string) os.FileMode {
		info, err := os.Stat(p)
		Expect(err).NotTo(HaveOccurred())
		return info.Mode().Perm()
	}

	It("creates a root-only folder and a file with the given mode and content", func() {
		Expect(atomicfile.Write(path, []byte("one"), 0o600)).To(Succeed())
		Expect(os.ReadFile(path)).To(Equal([]byte("one")))
		Expect(mode(path)).To(Equal(os.FileMode(0o600)))
		Expect(mode(dir)).To(Equal(os.FileMode(0o700)))

		Expect(atomicfile.Write(path, []byte("two"), 0o644)).To(Succeed())
		Expect(os.ReadFile(path)).To(Equal([]byte("two")))
		Expect(mode(path)).To(Equal(os.FileMode(0o644)), "the mode of the new file, not the old one")
	})

	It("removes the temporary files a killed writer left, and leaves its own none", func() {
		Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		leftover := filepath.Join(dir, ".secret-123")
		other := filepath.Join(dir, ".other-123")
		for _, f := range []string{leftover, other} {
			Expect(os.WriteFile(f, []byte("partial"), 0o600)).To(Succeed())
		}
		Expect(atomicfile.Write(path, []byte("one"), 0o600)).To(Succeed())
		entries, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		Expect(names).To(ConsistOf("secret", ".other-123"), "another file's temporary file is not this writer's")
	})

	It("leaves the old file and no temporary file when it cannot replace it", func() {
		Expect(atomicfile.Write(path, []byte("one"), 0o600)).To(Succeed())
		// A folder in the way of the rename.
		blocked := filepath.Join(dir, "blocked")
		Expect(os.MkdirAll(filepath.Join(blocked, "child"), 0o700)).To(Succeed())
		Expect(atomicfile.Write(blocked, []byte("two"), 0o600)).NotTo(Succeed())
		Expect(os.ReadFile(path)).To(Equal([]byte("one")))
		entries, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(2), "secret and blocked, no temporary file")
	})
})
