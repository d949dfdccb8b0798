// Package crd embeds drover's CRD manifests (controller-gen writes them
// here; `make manifests`), so that commands run outside the repository
// (drover dev-cluster) can install them.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed *.yaml
var files embed.FS

// WriteTo writes the CRD manifests into dir and returns their paths.
func WriteTo(dir string) ([]string, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("writing CRD %s: %w", p, err)
		}
		out = append(out, p)
	}
	return out, nil
}
