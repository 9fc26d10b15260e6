package imagebuild_test

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/hack/tools/image/imagebuild"
)

// One build of the agent (the smallest binary), packed twice; every spec
// reads those outputs.
var _ = Describe("Agent image", Ordered, func() {
	const version = "v0.0.0-imagebuild-test"
	var (
		platform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
		meta     = Metadata{Version: version, Revision: "0123456789abcdef", Source: "https://example.org/firewall", Created: time.Unix(1700000000, 0)}
		tag      name.Tag
		first    Outputs
		second   Outputs
		dirs     [2]string
		img      v1.Image
	)

	BeforeAll(func(ctx SpecContext) {
		if runtime.GOOS != "linux" {
			Skip("the image is for linux and its binary is run here")
		}
		bins, err := Lookup("firewall-agent")
		Expect(err).NotTo(HaveOccurred())
		paths, err := GoBuild{Binaries: bins, Platform: platform, Version: version, OutDir: GinkgoT().TempDir(), Stderr: GinkgoWriter}.Run(ctx)
		Expect(err).NotTo(HaveOccurred())
		tag, err = name.NewTag("example.org/firewall/firewall-agent:" + version)
		Expect(err).NotTo(HaveOccurred())

		build := func(dir string) Outputs {
			img, err := Image(bins[0], paths["firewall-agent"], platform, meta)
			Expect(err).NotTo(HaveOccurred())
			out, err := Write(dir, "firewall-agent", tag, []PlatformImage{{Platform: platform, Image: img}}, meta.Created)
			Expect(err).NotTo(HaveOccurred())
			return out
		}
		dirs = [2]string{GinkgoT().TempDir(), GinkgoT().TempDir()}
		first, second = build(dirs[0]), build(dirs[1])

		// The image as a consumer sees it: read back from the layout.
		idx, err := layout.ImageIndexFromPath(first.Layout)
		Expect(err).NotTo(HaveOccurred())
		top, err := idx.IndexManifest()
		Expect(err).NotTo(HaveOccurred())
		Expect(top.Manifests).To(HaveLen(1))
		child, err := idx.ImageIndex(top.Manifests[0].Digest)
		Expect(err).NotTo(HaveOccurred())
		img, err = child.Image(must(child.IndexManifest()).Manifests[0].Digest)
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(15*time.Minute))

	It("is reproducible: two builds give the same digest and byte-identical files", func() {
		Expect(second.Digest).To(Equal(first.Digest))
		Expect(fileHashes(dirs[1])).To(Equal(fileHashes(dirs[0])))
	})

	It("is a valid OCI layout whose index.json names the reference and whose index the platform", func() {
		idx, err := layout.ImageIndexFromPath(first.Layout)
		Expect(err).NotTo(HaveOccurred())
		top := must(idx.IndexManifest())
		Expect(top.Manifests[0].Digest).To(Equal(first.Digest))
		Expect(top.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", tag.String()))
		child, err := idx.ImageIndex(first.Digest)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate.Index(child)).To(Succeed())
		Expect(must(child.IndexManifest()).Manifests).To(ConsistOf(HaveField("Platform", HaveValue(Equal(platform)))))
	})

	It("runs as UID 65532 with the binary as entrypoint and the source labels", func() {
		cf := must(img.ConfigFile())
		Expect(cf.OS).To(Equal("linux"))
		Expect(cf.Architecture).To(Equal(runtime.GOARCH))
		Expect(cf.Created.Time.Equal(meta.Created)).To(BeTrue())
		Expect(cf.Config.User).To(Equal("65532:65532"))
		Expect(cf.Config.Entrypoint).To(Equal([]string{"/firewall-agent"}))
		Expect(cf.Config.Labels).To(And(
			HaveKeyWithValue("org.opencontainers.image.source", meta.Source),
			HaveKeyWithValue("org.opencontainers.image.revision", meta.Revision),
			HaveKeyWithValue("org.opencontainers.image.version", version),
		))
	})

	It("writes a docker archive with the same config and layers, tagged", func() {
		p := first.DockerArchives[platform.String()]
		Expect(p).To(BeAnExistingFile())
		fromTar, err := tarball.ImageFromPath(p, &tag)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate.Image(fromTar)).To(Succeed())
		Expect(fromTar.ConfigName()).To(Equal(must(img.ConfigName())))
		Expect(layerDigests(fromTar)).To(Equal(layerDigests(img)))
	})

	It("unpacked, runs its entrypoint, a static binary, which prints the version it was built with", func() {
		root := GinkgoT().TempDir()
		unpack(mutate.Extract(img), root)
		Expect(os.ReadFile(filepath.Join(root, "etc/passwd"))).To(ContainSubstring("nonroot:x:65532:65532:"))

		entrypoint := must(img.ConfigFile()).Config.Entrypoint
		bin := filepath.Join(root, entrypoint[0])
		// Static: no ELF interpreter and no shared libraries, because the
		// image has no libc (running it here would not show that: the host has one).
		f, err := elf.Open(bin)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		for _, p := range f.Progs {
			Expect(p.Type).NotTo(Equal(elf.PT_INTERP))
		}
		Expect(f.ImportedLibraries()).To(BeEmpty())

		out, err := exec.Command(bin, append(entrypoint[1:], "--version")...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(Equal("firewall-agent " + version + "\n"))
	})
})

// fileHashes maps every file below dir to its SHA-256.
func fileHashes(dir string) map[string]string {
	hashes := map[string]string{}
	Expect(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		hashes[must(filepath.Rel(dir, p))] = hex.EncodeToString(sum[:])
		return nil
	})).To(Succeed())
	Expect(hashes).NotTo(BeEmpty())
	return hashes
}

func layerDigests(img v1.Image) []v1.Hash {
	var out []v1.Hash
	for _, l := range must(img.Layers()) {
		out = append(out, must(l.Digest()))
	}
	return out
}
