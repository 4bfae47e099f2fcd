package wrapped

// Registration of the user's functions and DoFn structs with Beam: whether
// a function is registered, and the exact lines that register one, for the
// errors that ask for them.

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
)

// IsRegistered checks a function through Beam's global runtime.Resolver,
// which Beam reads without any lock of ours (runtime.ResolveFunction, on
// workers and on prism's in-process workers), so a check must not swap it.
// Instead init installs, once, CheckingResolver over the resolver there was:
// it passes every symbol through, except the names being checked, which it
// denies. Contract for anyone else replacing runtime.Resolver: do it before
// building or running pipelines, as Beam's own unguarded global demands;
// the first check after a replacement wraps the new resolver (one more
// write). The vet runner swaps it for a resolver that finds nothing and
// puts back the one it saved, which is ours.

// checkMu guards checking and the wrapping of runtime.Resolver. Sym2Addr
// takes it under Beam's resolver lock; IsRegistered never holds it while
// calling into Beam, so the two locks are never taken the other way round.
var checkMu sync.Mutex

// checking counts, for each symbol name, the checks of it in progress.
var checking = map[string]int{}

// CheckingResolver forwards Sym2Addr to next except for the names under
// check. Which names those are is package state, not the resolver's, so any
// CheckingResolver, even one a vet run puts back, denies them.
type CheckingResolver struct{ Next runtime.SymbolResolver }

func (r *CheckingResolver) Sym2Addr(name string) (uintptr, error) {
	checkMu.Lock()
	denied := checking[name] > 0
	checkMu.Unlock()
	if denied {
		return 0, fmt.Errorf("%s not found: its registration is being checked; register it with the beam/register package", name)
	}
	return r.Next.Sym2Addr(name)
}

func init() { wrapResolver() }

// wrapResolver installs a CheckingResolver over runtime.Resolver unless it
// is one already. It runs in init, before any worker can read the
// resolver, and again only if someone has replaced it. The caller holds
// checkMu, or is init.
func wrapResolver() {
	if _, ok := runtime.Resolver.(*CheckingResolver); !ok {
		runtime.Resolver = &CheckingResolver{Next: runtime.Resolver}
	}
}

// IsRegistered reports whether fn, a top-level function, is registered with
// Beam (register.FunctionNxM or beam.RegisterFunction), as Beam's vet runner
// decides it: runtime.ResolveFunction without the symbol table. A worker
// resolves an unregistered function from its binary's symbol table, which a
// stripped binary (-ldflags=-s) lacks, and then fails at run time only.
// In the launching process, a function that a pipeline run there already
// resolved from the symbol table (Beam caches what it resolves) counts as
// registered; a check itself never resolves one, since the resolver denies
// the name under check. For the same reason, a worker of this process that
// resolves that very name from the symbol table during the check fails as
// on a stripped binary: only an unregistered, not yet resolved function,
// the kind the check rejects, can meet this. Checks may run concurrently.
func IsRegistered(fn any) bool {
	name := reflectx.FunctionName(fn)
	checkMu.Lock()
	wrapResolver()
	checking[name]++
	checkMu.Unlock()
	defer func() {
		checkMu.Lock()
		if checking[name]--; checking[name] == 0 {
			delete(checking, name)
		}
		checkMu.Unlock()
	}()
	_, err := runtime.ResolveFunction(name, reflect.TypeOf(fn))
	return err == nil
}

// CheckRegistered returns an error, for option (what fn was given as),
// that gives the exact lines registering fn when fn is not registered, or
// says that a method value cannot be.
func CheckRegistered(option string, fn any) error {
	name := reflectx.FunctionName(fn)
	if strings.HasSuffix(name, "-fm") {
		return fmt.Errorf("%s: %s is a method value, bound to its receiver; declare a top-level function and register it", option, strings.TrimSuffix(name, "-fm"))
	}
	if IsRegistered(fn) {
		return nil
	}
	short, home := shortFuncName(name)
	return fmt.Errorf("%s: function %s is not registered with Beam, so a worker may not find it: add %s to an init() function of package %s",
		option, name, strings.Join(functionLines(short, home, reflect.TypeOf(fn)), " and "), home)
}

// shortFuncName splits a function's symbol name (path/pkg.Name) into the
// name its own package calls it by and its package's import path.
func shortFuncName(symbol string) (short, pkgPath string) {
	slash := strings.LastIndexByte(symbol, '/') + 1
	dot := strings.IndexByte(symbol[slash:], '.')
	if dot < 0 {
		return symbol, ""
	}
	return symbol[slash+dot+1:], symbol[:slash+dot]
}

// functionLines are the lines that register the function named name (as
// package home calls it) of type ft: register.FunctionNxM, then one
// register line per emitter or iterator among its parameters.
func functionLines(name, home string, ft reflect.Type) []string {
	line := fmt.Sprintf("register.Function%dx%d(%s)", ft.NumIn(), ft.NumOut(), name)
	if ft.IsVariadic() || ft.NumIn() > 10 || ft.NumOut() > 5 {
		line = fmt.Sprintf("beam.RegisterFunction(%s)", name)
	}
	return append([]string{line}, paramLines(params(ft), home)...)
}

// DoFnLines are the lines that register DoFn struct t, whose pointer type
// pt has ProcessElement: register.DoFnNxM with its parameter and result
// types, then its emitters and iterators; beam.RegisterType for a struct
// that register.DoFnNxM does not fit.
func DoFnLines(t reflect.Type) []string {
	home := t.PkgPath()
	m, ok := reflect.PointerTo(t).MethodByName("ProcessElement")
	if !ok || m.Type.IsVariadic() || m.Type.NumIn()-1 > 9 || m.Type.NumOut() > 5 {
		return []string{fmt.Sprintf("beam.RegisterType(reflect.TypeOf((*%s)(nil)).Elem())", t.Name())}
	}
	ft := methodType(m)
	var types []string
	for _, p := range params(ft) {
		types = append(types, goType(p, home))
	}
	for i := 0; i < ft.NumOut(); i++ {
		types = append(types, goType(ft.Out(i), home))
	}
	line := fmt.Sprintf("register.DoFn%dx%d", ft.NumIn(), ft.NumOut())
	if len(types) > 0 {
		line += "[" + strings.Join(types, ", ") + "]"
	}
	line += "(&" + t.Name() + "{})"
	return append([]string{line}, paramLines(params(ft), home)...)
}

// paramLines register the emitters (func(A[, B[, C]])) and iterators
// (func(*A[, *B]) bool) among in, once each, as Beam's register package
// spells them.
func paramLines(in []reflect.Type, home string) []string {
	var lines []string
	seen := map[string]bool{}
	for _, p := range in {
		if p.Kind() != reflect.Func || p.IsVariadic() {
			continue
		}
		var kind string
		var args []string
		switch {
		case p.NumOut() == 0 && p.NumIn() >= 1 && p.NumIn() <= 3:
			kind = "Emitter"
			if p.NumIn() == 3 && p.In(0) != beam.EventTimeType {
				continue // Emitter3 takes an event time first
			}
			for i := 0; i < p.NumIn(); i++ {
				args = append(args, goType(p.In(i), home))
			}
		case p.NumOut() == 1 && p.Out(0).Kind() == reflect.Bool && p.NumIn() >= 1 && p.NumIn() <= 2:
			kind = "Iter"
			for i := 0; i < p.NumIn(); i++ {
				if p.In(i).Kind() != reflect.Pointer {
					args = nil
					break
				}
				args = append(args, goType(p.In(i).Elem(), home))
			}
			if len(args) != p.NumIn() {
				continue
			}
		default:
			continue
		}
		line := fmt.Sprintf("register.%s%d[%s]()", kind, len(args), strings.Join(args, ", "))
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	return lines
}

// beamNames spell Beam's types as the beam package exports them.
var beamNames = map[reflect.Type]string{
	beam.EventTimeType:               "beam.EventTime",
	reflect.TypeFor[beam.Window]():   "beam.Window",
	reflect.TypeFor[beam.PaneInfo](): "beam.PaneInfo",
	reflect.TypeFor[beam.T]():        "beam.T",
	reflect.TypeFor[beam.U]():        "beam.U",
	reflect.TypeFor[beam.V]():        "beam.V",
	reflect.TypeFor[beam.W]():        "beam.W",
	reflect.TypeFor[beam.X]():        "beam.X",
	reflect.TypeFor[beam.Y]():        "beam.Y",
	reflect.TypeFor[beam.Z]():        "beam.Z",
	reflect.TypeFor[uint8]():         "byte",
	reflect.TypeFor[any]():           "any",
}

// goType spells t as Go source in package home does: home's own types
// unqualified, others by their package's name.
func goType(t reflect.Type, home string) string {
	if name, ok := beamNames[t]; ok {
		return name
	}
	if t.Name() != "" {
		if t.PkgPath() == "" || t.PkgPath() == home {
			return t.Name()
		}
		return TypeName(t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + goType(t.Elem(), home)
	case reflect.Slice:
		return "[]" + goType(t.Elem(), home)
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), goType(t.Elem(), home))
	case reflect.Map:
		return "map[" + goType(t.Key(), home) + "]" + goType(t.Elem(), home)
	case reflect.Chan:
		prefix := map[reflect.ChanDir]string{reflect.BothDir: "chan ", reflect.RecvDir: "<-chan ", reflect.SendDir: "chan<- "}[t.ChanDir()]
		return prefix + goType(t.Elem(), home)
	case reflect.Func:
		return funcType(t, home)
	}
	return t.String()
}

// funcType spells a func type.
func funcType(t reflect.Type, home string) string {
	in := make([]string, t.NumIn())
	for i := range in {
		in[i] = goType(t.In(i), home)
		if t.IsVariadic() && i == len(in)-1 {
			in[i] = "..." + goType(t.In(i).Elem(), home)
		}
	}
	out := make([]string, t.NumOut())
	for i := range out {
		out[i] = goType(t.Out(i), home)
	}
	s := "func(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
		return s
	case 1:
		return s + " " + out[0]
	}
	return s + " (" + strings.Join(out, ", ") + ")"
}
