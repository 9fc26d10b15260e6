package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"path"
	"sort"
	"time"
)

// epoch is every entry's modification time: the archive depends on the chart's content only,
// not on when or where it was checked out.
var epoch = time.Unix(0, 0).UTC()

// chartArchive packs the chart below dir of fsys as helm does (entries under the chart's
// folder name), deterministically: sorted entries, fixed time, mode and owner, no gzip name or
// time. Go's compress/flate is deterministic for one Go version.
func chartArchive(fsys fs.FS, dir string) ([]byte, error) {
	var files []string
	if err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	sort.Strings(files)

	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg,
			Name:     path.Join(path.Base(dir), f[len(dir)+1:]),
			Size:     int64(len(data)),
			Mode:     0o644,
			ModTime:  epoch,
			Format:   tar.FormatPAX,
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
