package imagebuild_test

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// unpack writes a flattened image filesystem (mutate.Extract) below root.
// The images hold only folders and regular files; anything else fails.
func unpack(rc io.ReadCloser, root string) {
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ExpectWithOffset(1, filepath.IsLocal(hdr.Name)).To(BeTrue(), hdr.Name)
		p := filepath.Join(root, hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			ExpectWithOffset(1, os.MkdirAll(p, 0o755)).To(Succeed())
		case tar.TypeReg:
			ExpectWithOffset(1, os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, hdr.FileInfo().Mode().Perm())
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			_, err = io.Copy(f, tr)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			ExpectWithOffset(1, f.Close()).To(Succeed())
		default:
			Fail("unexpected entry " + hdr.Name + " of type " + string(hdr.Typeflag))
		}
	}
}
