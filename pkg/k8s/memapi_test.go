package k8s

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// memAPI is an API server and the manager's client in front of it, in
// memory, for tests and benchmarks that run many executor cycles (the
// long-queue replay). It serves the kinds a cycle lists (cacheKind):
//
//   - as the API server: objects by key, with resource versions and
//     conflicts, the status subresource of TrainingJobs and pods (an
//     update keeps the stored status, a status update changes only the
//     status), pod Bindings, deletion with UID and resource-version
//     preconditions (a pod is gone at once: no finalizers, no kubelet
//     grace), creation time from the clock;
//   - as the informer cache the executor reads: client-go indexers with
//     the executor's live indexes (indexLive) and cache transform
//     (trimFinished), fed by every write as it returns (an informer
//     without lag, so a run is repeatable), and the informers' event
//     handlers (addInformers' finished-job count and reports).
//
// Other kinds, and the methods a cycle does not use on these kinds
// (Patch, Apply, DeleteAllOf, Watch), go to fallback, a controller-runtime
// fake client. controller-runtime's fake itself is not the API server
// here: it encodes objects to JSON and back on every read and write (and,
// by default, tracks managed fields with a REST mapper built per write),
// which costs ten to a hundred times what the executor spends on a call,
// so a replay through it measured the fake.
type memAPI struct {
	client.WithWatch // fallback

	// Now is the API server's clock (creation times); tests set it.
	Now func() time.Time

	mu sync.Mutex
	rv uint64
	// objs are the stored objects by item type and key; cache holds their
	// transformed copies as the informer cache does.
	objs     map[reflect.Type]map[string]client.Object
	cache    map[reflect.Type]toolscache.Indexer
	trim     toolscache.TransformFunc
	handlers map[reflect.Type][]toolscache.ResourceEventHandler
	// writes counts the successful writes by verb and kind ("status
	// TrainingJob").
	writes map[string]int
}

var (
	podType   = reflect.TypeFor[*corev1.Pod]()
	jobType   = reflect.TypeFor[*v1alpha1.TrainingJob]()
	cacheKind = map[reflect.Type]reflect.Type{ // list type -> item type
		reflect.TypeFor[*corev1.NodeList]():            reflect.TypeFor[*corev1.Node](),
		reflect.TypeFor[*corev1.PodList]():             podType,
		reflect.TypeFor[*v1alpha1.TrainingJobList]():   jobType,
		reflect.TypeFor[*schedv1alpha1.PodGroupList](): reflect.TypeFor[*schedv1alpha1.PodGroup](),
		reflect.TypeFor[*corev1.ResourceQuotaList]():   reflect.TypeFor[*corev1.ResourceQuota](),
		reflect.TypeFor[*appsv1.DeploymentList]():      reflect.TypeFor[*appsv1.Deployment](),
	}
)

// newMemAPI is an empty memAPI for the scheduler schedulerName, with
// fallback for what it does not serve.
func newMemAPI(fallback client.WithWatch, schedulerName string) *memAPI {
	m := &memAPI{WithWatch: fallback, Now: time.Now, objs: map[reflect.Type]map[string]client.Object{},
		cache: map[reflect.Type]toolscache.Indexer{}, trim: trimFinished(schedulerName),
		handlers: map[reflect.Type][]toolscache.ResourceEventHandler{}, writes: map[string]int{}}
	for _, typ := range cacheKind {
		idx := toolscache.Indexers{}
		switch typ {
		case podType:
			idx[IndexPod] = func(o any) ([]string, error) { return []string{podState(o.(*corev1.Pod), schedulerName)}, nil }
		case jobType:
			idx[IndexJobLive] = func(o any) ([]string, error) { return []string{jobLive(o.(*v1alpha1.TrainingJob))}, nil }
		}
		m.cache[typ] = toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, idx)
		m.objs[typ] = map[string]client.Object{}
	}
	return m
}

// handle adds an informer event handler for objects of obj's type; it
// sees the objects already cached as added.
func (m *memAPI) handle(obj client.Object, h toolscache.ResourceEventHandler) {
	typ := reflect.TypeOf(obj)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers[typ] = append(m.handlers[typ], h)
	for _, o := range m.cache[typ].List() {
		h.OnAdd(o, true)
	}
}

// indexExecutor makes e read through m as the manager's executor reads
// through its cache (addInformers): the live indexes, the finished-job
// count and the trainers' reports fed by the informers' events. (Make
// e with apiReader{m} as its reader: the manager's APIReader.)
func (m *memAPI) indexExecutor(e *Executor) {
	e.indexed = true
	e.finished = newFinishedJobs(e.cfg.Namespace)
	m.handle(&v1alpha1.TrainingJob{}, e.finished.handler())
	m.handle(&corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { observe(e, o) },
		UpdateFunc: func(_, o any) { observe(e, o) },
	})
}

func storeKey(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func keyOf(k client.ObjectKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

func notFound(typ reflect.Type, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(typ.Elem().Name()) + "s"}, name)
}

func conflict(typ reflect.Type, name, why string) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: strings.ToLower(typ.Elem().Name()) + "s"}, name, fmt.Errorf("%s", why))
}

// copyInto sets *dst to a deep copy of src (both of one pointer type).
func copyInto(dst client.Object, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}

// Get reads a served kind from the cache (a deep copy), others from the
// fallback.
func (m *memAPI) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := m.cache[reflect.TypeOf(obj)]
	if !ok {
		return m.WithWatch.Get(ctx, key, obj, opts...)
	}
	item, exists, err := s.GetByKey(keyOf(key))
	if err != nil {
		return err
	}
	if !exists {
		return notFound(reflect.TypeOf(obj), key.Name)
	}
	copyInto(obj, item.(runtime.Object))
	return nil
}

// List lists a served kind from the cache as controller-runtime's cache
// reader does (one exact field selector through its index, namespace and
// label selector, deep copies unless UnsafeDisableDeepCopy), sorted by
// key so that a run is repeatable; other kinds from the fallback.
func (m *memAPI) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	typ, ok := cacheKind[reflect.TypeOf(list)]
	if !ok {
		return m.WithWatch.List(ctx, list, opts...)
	}
	var o client.ListOptions
	o.ApplyOptions(opts)
	s := m.cache[typ]
	var items []any
	if o.FieldSelector != nil {
		reqs := o.FieldSelector.Requirements()
		if len(reqs) != 1 {
			return fmt.Errorf("list %v: field selector %s: want one requirement", typ, o.FieldSelector)
		}
		var err error
		if items, err = s.ByIndex(reqs[0].Field, reqs[0].Value); err != nil {
			return err
		}
	} else {
		items = s.List()
	}
	deep := o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy
	return setList(list, items, o, deep)
}

// setList fills list with the items that match o, sorted by key.
func setList(list client.ObjectList, items []any, o client.ListOptions, deep bool) error {
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		obj := it.(client.Object)
		if o.Namespace != "" && obj.GetNamespace() != o.Namespace {
			continue
		}
		if o.LabelSelector != nil && !o.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		if deep {
			obj = obj.DeepCopyObject().(client.Object)
		}
		out = append(out, obj)
	}
	slices.SortFunc(out, func(a, b runtime.Object) int {
		return strings.Compare(storeKey(a.(client.Object)), storeKey(b.(client.Object)))
	})
	return meta.SetList(list, out)
}

// apiReader reads the API server's objects (the manager's APIReader).
type apiReader struct{ m *memAPI }

func (r apiReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	typ := reflect.TypeOf(obj)
	objs, ok := r.m.objs[typ]
	if !ok {
		return r.m.WithWatch.Get(ctx, key, obj, opts...)
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	cur := objs[keyOf(key)]
	if cur == nil {
		return notFound(typ, key.Name)
	}
	copyInto(obj, cur)
	return nil
}

func (r apiReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	typ, ok := cacheKind[reflect.TypeOf(list)]
	if !ok {
		return r.m.WithWatch.List(ctx, list, opts...)
	}
	var o client.ListOptions
	o.ApplyOptions(opts)
	if o.FieldSelector != nil {
		return fmt.Errorf("list %v: the API reader has no field indexes", typ)
	}
	r.m.mu.Lock()
	items := make([]any, 0, len(r.m.objs[typ]))
	for _, obj := range r.m.objs[typ] {
		items = append(items, obj)
	}
	r.m.mu.Unlock()
	return setList(list, items, o, true)
}

// store puts obj (or, nil, the removal of key) into the API server's
// objects and the cache, with the informers' events; m.mu is held.
func (m *memAPI) store(typ reflect.Type, key string, obj client.Object) {
	old, had, _ := m.cache[typ].GetByKey(key)
	if obj == nil {
		delete(m.objs[typ], key)
		if had {
			_ = m.cache[typ].Delete(old)
			for _, h := range m.handlers[typ] {
				h.OnDelete(old)
			}
		}
		return
	}
	m.objs[typ][key] = obj
	c, _ := m.trim(obj.DeepCopyObject())
	if had {
		_ = m.cache[typ].Update(c)
		for _, h := range m.handlers[typ] {
			h.OnUpdate(old, c)
		}
	} else {
		_ = m.cache[typ].Add(c)
		for _, h := range m.handlers[typ] {
			h.OnAdd(c, false)
		}
	}
}

// write runs one write under m.mu: change gets the stored object (nil
// when there is none) and returns the new one (nil: delete), or an
// error; the new object gets the next resource version and is copied
// back into obj, as the API server's response is.
func (m *memAPI) write(verb string, obj client.Object, change func(cur client.Object) (client.Object, error)) error {
	typ := reflect.TypeOf(obj)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := storeKey(obj)
	next, err := change(m.objs[typ][key])
	if err != nil {
		return err
	}
	m.writes[verb+" "+typ.Elem().Name()]++
	if next == nil {
		m.store(typ, key, nil)
		return nil
	}
	m.rv++
	next.SetResourceVersion(strconv.FormatUint(m.rv, 10))
	m.store(typ, key, next)
	copyInto(obj, next)
	return nil
}

// checkRV fails an update whose resource version is set and stale.
func checkRV(typ reflect.Type, obj, cur client.Object) error {
	if cur == nil {
		return notFound(typ, obj.GetName())
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return conflict(typ, obj.GetName(), "the object has been modified")
	}
	return nil
}

// withStatus returns a copy of obj with the status of from (both
// TrainingJobs or both pods; other kinds have no status subresource
// here and are returned as they are).
func withStatus(obj, from client.Object) client.Object {
	out := obj.DeepCopyObject().(client.Object)
	switch o := out.(type) {
	case *v1alpha1.TrainingJob:
		o.Status = *from.(*v1alpha1.TrainingJob).Status.DeepCopy()
	case *corev1.Pod:
		o.Status = *from.(*corev1.Pod).Status.DeepCopy()
	}
	return out
}

func (m *memAPI) served(obj client.Object) bool {
	_, ok := m.objs[reflect.TypeOf(obj)]
	return ok
}

func (m *memAPI) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if !m.served(obj) {
		return m.WithWatch.Create(ctx, obj, opts...)
	}
	return m.write("create", obj, func(cur client.Object) (client.Object, error) {
		if cur != nil {
			return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: reflect.TypeOf(obj).Elem().Name()}, obj.GetName())
		}
		next := obj.DeepCopyObject().(client.Object)
		if next.GetUID() == "" {
			next.SetUID(types.UID(fmt.Sprintf("uid-%d", m.rv+1)))
		}
		if ts := next.GetCreationTimestamp(); ts.IsZero() {
			next.SetCreationTimestamp(metav1.NewTime(m.Now()))
		}
		next.SetGeneration(1)
		return next, nil
	})
}

func (m *memAPI) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if !m.served(obj) {
		return m.WithWatch.Update(ctx, obj, opts...)
	}
	typ := reflect.TypeOf(obj)
	return m.write("update", obj, func(cur client.Object) (client.Object, error) {
		if err := checkRV(typ, obj, cur); err != nil {
			return nil, err
		}
		next := withStatus(obj, cur)
		next.SetGeneration(cur.GetGeneration())
		return next, nil
	})
}

// Patch is not served: a cycle of TrainingJobs does not patch.
func (m *memAPI) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if !m.served(obj) {
		return m.WithWatch.Patch(ctx, obj, patch, opts...)
	}
	return fmt.Errorf("memAPI: patch of %T is not served", obj)
}

func (m *memAPI) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if !m.served(obj) {
		return m.WithWatch.Delete(ctx, obj, opts...)
	}
	var o client.DeleteOptions
	o.ApplyOptions(opts)
	typ := reflect.TypeOf(obj)
	return m.write("delete", obj, func(cur client.Object) (client.Object, error) {
		if cur == nil {
			return nil, notFound(typ, obj.GetName())
		}
		if p := o.Preconditions; p != nil {
			if p.UID != nil && *p.UID != cur.GetUID() || p.ResourceVersion != nil && *p.ResourceVersion != cur.GetResourceVersion() {
				return nil, conflict(typ, obj.GetName(), "precondition failed")
			}
		}
		return nil, nil
	})
}

// DeleteAllOf is not served: the executor does not call it.
func (m *memAPI) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if !m.served(obj) {
		return m.WithWatch.DeleteAllOf(ctx, obj, opts...)
	}
	return fmt.Errorf("memAPI: deleteAllOf %T is not served", obj)
}

func (m *memAPI) Status() client.SubResourceWriter { return m.SubResource("status") }

func (m *memAPI) SubResource(sub string) client.SubResourceClient {
	return memSub{m: m, name: sub, fallback: m.WithWatch.SubResource(sub)}
}

// memSub serves status updates and pod Bindings.
type memSub struct {
	m        *memAPI
	name     string
	fallback client.SubResourceClient
}

func (s memSub) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	return s.fallback.Get(ctx, obj, subResource, opts...)
}

func (s memSub) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	b, ok := subResource.(*corev1.Binding)
	if !s.m.served(obj) || s.name != "binding" || !ok {
		return s.fallback.Create(ctx, obj, subResource, opts...)
	}
	return s.m.write("bind", obj, func(cur client.Object) (client.Object, error) {
		if cur == nil {
			return nil, notFound(podType, obj.GetName())
		}
		p := cur.DeepCopyObject().(*corev1.Pod)
		if p.Spec.NodeName != "" {
			return nil, conflict(podType, p.Name, "pod is already assigned to node "+p.Spec.NodeName)
		}
		p.Spec.NodeName = b.Target.Name
		return p, nil
	})
}

func (s memSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if !s.m.served(obj) || s.name != "status" {
		return s.fallback.Update(ctx, obj, opts...)
	}
	typ := reflect.TypeOf(obj)
	return s.m.write("status", obj, func(cur client.Object) (client.Object, error) {
		if err := checkRV(typ, obj, cur); err != nil {
			return nil, err
		}
		return withStatus(cur, obj), nil
	})
}

func (s memSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if !s.m.served(obj) {
		return s.fallback.Patch(ctx, obj, patch, opts...)
	}
	return fmt.Errorf("memAPI: %s patch of %T is not served", s.name, obj)
}
