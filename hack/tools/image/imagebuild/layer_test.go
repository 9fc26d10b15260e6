package imagebuild_test

import (
	"archive/tar"
	"errors"
	"io"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/hack/tools/image/imagebuild"
)

var _ = Describe("Layer", func() {
	mtime := time.Unix(1700000000, 0)
	files := []File{
		{Path: "etc", Mode: 0o755, Dir: true},
		{Path: "etc/passwd", Mode: 0o644, Content: []byte("root:x:0:0::/:\n")},
		{Path: "tmp", Mode: 0o1777, Dir: true, UID: 65532, GID: 65532},
	}

	It("is the same bytes whatever order the files come in", func() {
		a, err := Layer(files, mtime)
		Expect(err).NotTo(HaveOccurred())
		b, err := Layer([]File{files[2], files[1], files[0]}, mtime)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Digest()).To(Equal(must(a.Digest())))
	})

	It("writes sorted entries with numeric owners, modes and one fixed time", func() {
		l, err := Layer([]File{files[2], files[0], files[1]}, mtime)
		Expect(err).NotTo(HaveOccurred())
		rc, err := l.Uncompressed()
		Expect(err).NotTo(HaveOccurred())
		defer rc.Close()
		var got []*tar.Header
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			got = append(got, hdr)
		}
		Expect(got).To(HaveExactElements(
			And(HaveField("Name", "etc/"), HaveField("Typeflag", byte(tar.TypeDir)), HaveField("Mode", int64(0o755))),
			And(HaveField("Name", "etc/passwd"), HaveField("Size", int64(15))),
			And(HaveField("Name", "tmp/"), HaveField("Mode", int64(0o1777)), HaveField("Uid", 65532), HaveField("Gid", 65532)),
		))
		for _, hdr := range got {
			Expect(hdr.ModTime.Equal(mtime)).To(BeTrue(), hdr.Name)
			Expect(hdr.Uname).To(BeEmpty(), hdr.Name)
			Expect(hdr.Format).To(Equal(tar.FormatUSTAR), hdr.Name)
		}
	})

	It("changes its digest with the time, so the time is really written", func() {
		a, err := Layer(files, mtime)
		Expect(err).NotTo(HaveOccurred())
		b, err := Layer(files, mtime.Add(time.Second))
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Digest()).NotTo(Equal(must(a.Digest())))
	})

	It("refuses paths that would leave the root or appear twice", func() {
		_, err := Layer([]File{{Path: "../etc/passwd"}}, mtime)
		Expect(err).To(MatchError(ContainSubstring(`"../etc/passwd": want a clean relative path`)))
		_, err = Layer([]File{{Path: "/etc"}}, mtime)
		Expect(err).To(MatchError(ContainSubstring("want a clean relative path")))
		_, err = Layer([]File{files[1], files[1]}, mtime)
		Expect(err).To(MatchError(ContainSubstring(`"etc/passwd": listed twice`)))
	})
})

func must[T any](v T, err error) T {
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return v
}
