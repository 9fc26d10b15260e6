package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer.
type File struct {
	// Path is relative to the root, slash-separated, without a leading slash.
	Path string
	// Mode holds the permission bits, sticky bit included (0o1777).
	Mode     int64
	UID, GID int
	Dir      bool
	Content  []byte
}

// Layer returns a gzip-compressed OCI layer holding exactly these files. The
// tar is the same bytes for the same files: entries sorted by path, numeric
// owners only (no user or group names), every time set to mtime, USTAR format
// (no PAX records with access or change times).
func Layer(files []File, mtime time.Time) (v1.Layer, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, f := range sorted {
		// fs.ValidPath: relative, slash-separated, no "." or ".." elements.
		if !fs.ValidPath(f.Path) || f.Path == "." {
			return nil, fmt.Errorf("layer entry %q: want a clean relative path", f.Path)
		}
		if i > 0 && sorted[i-1].Path == f.Path {
			return nil, fmt.Errorf("layer entry %q: listed twice", f.Path)
		}
		hdr := &tar.Header{
			Name:    f.Path,
			Mode:    f.Mode,
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mtime.UTC(),
			Format:  tar.FormatUSTAR,
		}
		if f.Dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Content))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %q: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	// Compressed once and kept: the digest, the layout and the tarballs all
	// read the compressed bytes. Best compression, because an image is built
	// once and pulled onto every seed and firewall.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
}
