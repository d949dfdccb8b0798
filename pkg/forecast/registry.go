package forecast

import (
	"fmt"
	"sort"
	"strings"
)

// Options configure the models New builds. Zero values take the defaults
// documented per field.
type Options struct {
	// Seed fixes network initialisation and batch sampling (default 1).
	Seed uint64
	// Periods in steps (default {288, 2016}: a day and a week of 5-minute
	// steps). Holt-Winters, seasonal-naive and the transformer's periodic
	// encoding use them.
	Periods []int
	// Net sizes the networks: NetSmall (the default) or NetPaper (see
	// NewTransformer and NewLSTM).
	Net string
	// Window is the networks' input length in steps (default: 24, 2 h,
	// for NetSmall, whose cost on the pure-Go backend grows with it;
	// 576, the paper's 2 days, for NetPaper).
	Window int
	// TrainSteps is the networks' number of optimiser steps (default:
	// the model's; Quick divides it by 10).
	TrainSteps int
	// Quick shrinks the networks' training for smoke runs and tests.
	Quick bool
}

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if len(o.Periods) == 0 {
		o.Periods = []int{288, 2016}
	}
	if o.Net == "" {
		o.Net = NetSmall
	}
	if o.Window <= 0 {
		o.Window = 24
		if o.Net == NetPaper {
			o.Window = PaperWindow
		}
	}
	return o
}

// Network sizes (Options.Net).
const (
	// NetSmall is the size drover's autoscaler uses by default: it trains
	// in a minute or two on two CPU cores.
	NetSmall = "small"
	// NetPaper is the paper's size where the paper gives it (window,
	// layer counts, warm-up), with the training budget stated on
	// NewTransformer and NewLSTM.
	NetPaper = "paper"
	// PaperWindow is the paper's input window: 2 days of 5-minute steps
	// (Figure 9).
	PaperWindow = 576
)

// NetSizes lists the valid Options.Net values.
func NetSizes() []string { return []string{NetSmall, NetPaper} }

func checkNet(net string) error {
	if net != NetSmall && net != NetPaper {
		return fmt.Errorf("network size %q: want %s or %s", net, NetSmall, NetPaper)
	}
	return nil
}

// Entry is one model of the registry.
type Entry struct {
	Name, Description string
	New               func(Options) Forecaster
}

// Entries lists every model, in the order of the paper's Table 4 (plus
// seasonal-naive and naive, references the paper does not report).
func Entries() []Entry {
	return []Entry{
		{"transformer", "encoder-decoder transformer with periodic positional encoding (GoMLX)", func(o Options) Forecaster { return NewTransformer(o) }},
		{"lstm", "two stacked LSTM layers and a linear output (GoMLX)", func(o Options) Forecaster { return NewLSTM(o) }},
		{"holt-winters", "additive Holt-Winters, daily + weekly seasons, fitted by one-step SSE", func(o Options) Forecaster {
			o = o.withDefaults()
			return &HoltWinters{Periods: o.Periods}
		}},
		{"holt-winters-paper", "Holt-Winters with the paper's fixed alpha=0.5, beta=0.001, gamma=0.3, weekly period", func(o Options) Forecaster {
			o = o.withDefaults()
			week := o.Periods[len(o.Periods)-1]
			return &HoltWinters{Periods: []int{week}, Fixed: []float64{0.5, 0.001, 0.3}, Label: "holt-winters-paper"}
		}},
		{"arima", "ARIMA(7,1,7) with constant, conditional sum of squares", func(Options) Forecaster { return &ARIMA{P: 7, Q: 7} }},
		{"seasonal-naive", "the value one week (or day) earlier", func(o Options) Forecaster {
			o = o.withDefaults()
			return &SeasonalNaive{Periods: o.Periods}
		}},
		{"naive", "the last value (persistence), the reference for one-step forecasts", func(Options) Forecaster { return &Naive{} }},
		{"static", "the training maximum (static allocation at peak)", func(Options) Forecaster { return &Static{} }},
	}
}

// Names lists the registered model names.
func Names() []string {
	var out []string
	for _, e := range Entries() {
		out = append(out, e.Name)
	}
	return out
}

// New builds the named model.
func New(name string, o Options) (Forecaster, error) {
	o = o.withDefaults()
	if err := checkNet(o.Net); err != nil {
		return nil, err
	}
	for _, e := range Entries() {
		if e.Name == name {
			return e.New(o), nil
		}
	}
	names := Names()
	sort.Strings(names)
	return nil, fmt.Errorf("unknown forecaster %q (want one of %s)", name, strings.Join(names, ", "))
}
