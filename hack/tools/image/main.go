// Command image builds the project's binaries and their container images with
// Go tooling only: no Docker engine, no base image to pull. Run it from the
// repository (the Makefile's `images` and `firewall-agent` targets do):
//
//	go run ./hack/tools/image images --version v1.2.3 [flags] [NAME...]
//	go run ./hack/tools/image binary --version v1.2.3 [flags] [NAME...]
//
// NAME is one of the binaries in imagebuild.Binaries; all of them if none.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/metal-firewall/gardener-extension-firewall/hack/tools/image/imagebuild"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

const usage = "usage: image images|binary [flags] [NAME...]"

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "images":
		return images(ctx, args[1:])
	case "binary":
		return binary(ctx, args[1:])
	default:
		return fmt.Errorf("unknown subcommand %q; %s", args[0], usage)
	}
}

// binary writes static binaries to <output>/<name>, e.g. the agent for
// firewall OS images.
func binary(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("binary", flag.ContinueOnError)
	output := fs.String("output", "_output/bin", "folder for the binaries")
	version := fs.String("version", "", "version written into the binaries (required)")
	platform := fs.String("platform", "linux/amd64", "target <os>/<arch>")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bins, p, err := parseCommon(fs.Args(), *version, *platform)
	if err != nil {
		return err
	}
	paths, err := imagebuild.GoBuild{Binaries: bins, Platform: *p, Version: *version, OutDir: *output}.Run(ctx)
	if err != nil {
		return err
	}
	for _, b := range bins {
		fmt.Println(paths[b.Name])
	}
	return nil
}

// images builds each binary for every platform and writes its image below
// <output>/<name>.
func images(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	output := fs.String("output", "_output/images", "folder for the images, one subfolder each")
	version := fs.String("version", "", "version: written into the binaries, the image tag and label (required)")
	revision := fs.String("revision", "", "source revision for the org.opencontainers.image.revision label")
	source := fs.String("source", "https://github.com/metal-firewall/gardener-extension-firewall", "repository URL for the org.opencontainers.image.source label")
	repository := fs.String("repository", "ghcr.io/metal-firewall", "repository prefix of the image references: <repository>/<name>:<version>")
	platforms := fs.String("platforms", "linux/amd64", "comma-separated <os>/<arch> list")
	epoch := fs.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970 written as every time in the images (default $SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bins, _, err := parseCommon(fs.Args(), *version, "linux/amd64")
	if err != nil {
		return err
	}
	var plats []v1.Platform
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--platforms: %w", err)
		}
		plats = append(plats, *p)
	}
	created := time.Unix(0, 0)
	if *epoch != "" {
		sec, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("--epoch / SOURCE_DATE_EPOCH %q: %w", *epoch, err)
		}
		created = time.Unix(sec, 0)
	}
	meta := imagebuild.Metadata{Version: *version, Revision: *revision, Source: *source, Created: created}

	tmp, err := os.MkdirTemp("", "image-build-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// All binaries of a platform in one go build; images one at a time, so
	// that only one binary's layers are held in memory.
	built := map[string]map[string]string{}
	for _, p := range plats {
		dir := filepath.Join(tmp, p.OS+"_"+p.Architecture)
		built[p.String()], err = imagebuild.GoBuild{Binaries: bins, Platform: p, Version: *version, OutDir: dir}.Run(ctx)
		if err != nil {
			return err
		}
	}
	for _, b := range bins {
		tag, err := name.NewTag(fmt.Sprintf("%s/%s:%s", *repository, b.Name, *version))
		if err != nil {
			return fmt.Errorf("image reference of %s: %w", b.Name, err)
		}
		var pis []imagebuild.PlatformImage
		for _, p := range plats {
			img, err := imagebuild.Image(b, built[p.String()][b.Name], p, meta)
			if err != nil {
				return err
			}
			pis = append(pis, imagebuild.PlatformImage{Platform: p, Image: img})
		}
		out, err := imagebuild.Write(filepath.Join(*output, b.Name), b.Name, tag, pis, created)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Name, err)
		}
		if err := report(tag, out, pis); err != nil {
			return err
		}
	}
	return nil
}

func parseCommon(names []string, version, platform string) ([]imagebuild.Binary, *v1.Platform, error) {
	if version == "" {
		return nil, nil, errors.New("--version is required")
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, nil, fmt.Errorf("--platform: %w", err)
	}
	if len(names) == 0 {
		return imagebuild.Binaries, p, nil
	}
	bins, err := imagebuild.Lookup(names...)
	return bins, p, err
}

// report prints what a user pins or loads: the reference, the index digest,
// and per platform the manifest digest, the compressed size and the tarball.
func report(tag name.Tag, out imagebuild.Outputs, pis []imagebuild.PlatformImage) error {
	fmt.Printf("%s@%s\n  layout %s\n  oci-archive %s\n", tag, out.Digest, out.Layout, out.OCIArchive)
	for _, pi := range pis {
		d, err := pi.Image.Digest()
		if err != nil {
			return err
		}
		size, err := imagebuild.CompressedSize(pi.Image)
		if err != nil {
			return err
		}
		fmt.Printf("  %s %s %.1f MiB compressed, docker-archive %s\n", pi.Platform.String(), d, float64(size)/(1<<20), out.DockerArchives[pi.Platform.String()])
	}
	return nil
}
