package imagebuild

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// TarDir writes the tree below dir as a tar that is the same bytes for the
// same tree: entries in lexical order (WalkDir's), owner 0, modes 0755 for
// folders and 0644 for files, every time set to mtime. An OCI image layout in
// such a tar is an "oci-archive", which ctr and podman load. Files are opened
// through an os.Root, so a symlink in the tree cannot pull in a file from
// outside it.
func TarDir(dir string, w io.Writer, mtime time.Time) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime.UTC(), Format: tar.FormatUSTAR}
		if d.IsDir() {
			hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, hdr.Name+"/"
			return tw.WriteHeader(hdr)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := root.Open(rel)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
