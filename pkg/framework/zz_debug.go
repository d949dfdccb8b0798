package framework

import (
	"fmt"
	"os"
)

type dbgT struct{ Walks, Idx, Build, Full, Drop, Blind, Change int }

var Dbg dbgT

func DbgPrint() { fmt.Fprintf(os.Stderr, "%+v\n", Dbg); Dbg = dbgT{} }
