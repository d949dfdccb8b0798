package embed

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/textio"
)

// InstanceType is one cloud instance type: a bucket boundary.
type InstanceType struct {
	Name string
	Cap  Vec
	// Price is the on-demand price in USD per hour.
	Price float64
}

// Catalog is a list of instance types, sorted by Compare (Alg. 1) when it
// comes from this package.
type Catalog []InstanceType

// awsCSV lists the AWS m5 and g4dn series. Source: the AWS EC2 on-demand
// price list for Linux in us-east-1 (N. Virginia), as published in 2024
// (https://aws.amazon.com/ec2/pricing/on-demand/), and the instance-type
// pages for vCPU, memory and GPU counts; prices change, so treat them as
// relative costs. The paper writes "g4" for g4dn.
//
//go:embed aws.csv
var awsCSV string

// AWS returns the catalogue of one series ("m5", "g4dn") or of both ("" or
// "all"), sorted by Compare.
func AWS(series string) (Catalog, error) {
	all, err := ParseCatalog(strings.NewReader(awsCSV), "aws.csv (embedded)")
	if err != nil {
		return nil, err
	}
	if series == "" || series == "all" {
		return all, nil
	}
	var out Catalog
	for _, t := range all {
		if strings.HasPrefix(t.Name, series+".") {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("unknown instance series %q (want m5, g4dn or all)", series)
	}
	return out, nil
}

// MustAWS is AWS for the embedded, known-good series names.
func MustAWS(series string) Catalog {
	c, err := AWS(series)
	if err != nil {
		panic(err)
	}
	return c
}

// ParseCatalog reads a CSV with header name,vcpu,memory_gib,gpu,price_usd_hour
// and returns the types sorted by Compare. Errors name the file, line and
// field.
func ParseCatalog(r io.Reader, file string) (Catalog, error) {
	cr := csv.NewReader(textio.NewCSVReader(r, file))
	cr.Comment = '#'
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	want := []string{"name", "vcpu", "memory_gib", "gpu", "price_usd_hour"}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(want, ",") {
		return nil, fmt.Errorf("%s:1: header must be %s", file, strings.Join(want, ","))
	}
	var c Catalog
	seen := map[string]bool{}
	for i, rec := range recs[1:] {
		line := i + 2
		t := InstanceType{Name: strings.TrimSpace(rec[0])}
		if t.Name == "" || seen[t.Name] {
			return nil, fmt.Errorf("%s:%d: name %q is empty or repeated", file, line, t.Name)
		}
		seen[t.Name] = true
		vals := make([]float64, 4)
		for k := range vals {
			v, err := textio.ParseDecimal(strings.TrimSpace(rec[k+1]))
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%s:%d: %s %q is not a number >= 0", file, line, want[k+1], rec[k+1])
			}
			vals[k] = v
		}
		t.Cap = Vec{GPU: vals[2], CPU: vals[0], Mem: vals[1]}
		t.Price = vals[3]
		if t.Cap[CPU] == 0 || t.Cap[Mem] == 0 {
			return nil, fmt.Errorf("%s:%d: %s has no CPU or memory", file, line, t.Name)
		}
		c = append(c, t)
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("%s: no instance types", file)
	}
	return c.Sorted(), nil
}

// Sorted returns a copy sorted by Compare (ties by price, then name).
func (c Catalog) Sorted() Catalog {
	out := append(Catalog(nil), c...)
	sort.SliceStable(out, func(i, j int) bool {
		if d := Compare(out[i].Cap, out[j].Cap); d != 0 {
			return d < 0
		}
		if out[i].Price != out[j].Price {
			return out[i].Price < out[j].Price
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Caps returns the capacity vectors in catalogue order.
func (c Catalog) Caps() []Vec {
	out := make([]Vec, len(c))
	for i, t := range c {
		out[i] = t.Cap
	}
	return out
}

// Names returns the type names in catalogue order.
func (c Catalog) Names() []string {
	out := make([]string, len(c))
	for i, t := range c {
		out[i] = t.Name
	}
	return out
}

// Index returns the position of the named type, or -1.
func (c Catalog) Index(name string) int {
	for i, t := range c {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// Embed packs demands into the catalogue's types (Alg. 2) and returns one
// rounded-up instance count per type, in catalogue order. It fails with an
// error wrapping ErrNoFit when no type holds some demand.
func (c Catalog) Embed(demands []Vec) ([]float64, error) {
	return Embed(demands, c.Caps())
}

// Cost is the hourly price of the given counts (one per type).
func (c Catalog) Cost(counts []float64) float64 {
	var s float64
	for i, n := range counts {
		s += n * c[i].Price
	}
	return s
}
