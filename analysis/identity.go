package analysis

import (
	"cmp"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Identity is who a target is: the service it belongs to, as the
// ecosystem names it, and how retrytop learned it. Replicas share a
// Service and differ by target.
type Identity struct {
	Service   string `json:"service"`
	Namespace string `json:"namespace,omitempty"`
	Instance  string `json:"instance,omitempty"`
	// Source is how the service name was found, in order of precedence:
	// NameUser, NameTargetInfo, NameJob, NameAddress.
	Source string `json:"name_source"`
}

// Identity sources.
const (
	// NameUser: the user named the target (name=URL, a config name).
	NameUser = "user"
	// NameTargetInfo: OpenTelemetry's target_info series, service_name.
	NameTargetInfo = "target_info"
	// NameJob: the job of file_sd, prometheus.yml or a Prometheus series.
	NameJob = "job"
	// NameAddress: nothing better than the target's host:port.
	NameAddress = "address"
)

// OpenTelemetry's resource attributes on target_info.
const (
	labelServiceName      = "service_name"
	labelServiceNamespace = "service_namespace"
	labelServiceInstance  = "service_instance_id"
)

// Identities names every target of statuses: a name the user gave wins;
// else the service_name of the target's newest target_info series in st;
// else its job (the status's Layer, which discovery sets to the job);
// else its address. A name is the user's when it is not the host:port of
// the target's URL, which is what an unnamed target is called, nor the
// name its own target_info makes (namespace/service@instance: how the
// OTLP receiver names a pushed resource).
func Identities(st *model.Store, statuses []model.TargetStatus) map[string]Identity {
	out := make(map[string]Identity, len(statuses))
	for _, s := range statuses {
		id := Identity{Service: s.Name, Source: NameAddress}
		resource := ""
		if info, ok := targetInfo(st, s.Name); ok {
			id.Namespace, id.Instance = info.Get(labelServiceNamespace), info.Get(labelServiceInstance)
			if name := info.Get(labelServiceName); name != "" && !strings.HasPrefix(name, "unknown_service") {
				id.Service, id.Source = name, NameTargetInfo
			}
			resource = model.ResourceTarget(info.Get(labelServiceNamespace), info.Get(labelServiceName), info.Get(labelServiceInstance))
		}
		switch {
		case s.Name != "" && s.Name == resource && id.Source == NameTargetInfo:
		case s.Name != "" && !isAddressName(s.Name, s.URL) && s.Name != resource:
			id.Service, id.Source = s.Name, NameUser
		case id.Source == NameTargetInfo:
		case s.Layer != "":
			id.Service, id.Source = s.Layer, NameJob
		}
		out[s.Name] = id
	}
	return out
}

// targetInfo returns the labels of target's newest target_info series.
func targetInfo(st *model.Store, target string) (model.Labels, bool) {
	if st == nil {
		return model.Labels{}, false
	}
	var best model.Labels
	var bestT int64
	found := false
	for _, s := range st.Select(target, model.MetricTargetInfo, nil) {
		if n := len(s.Points); n > 0 && (!found || s.Points[n-1].T > bestT) {
			best, bestT, found = s.Labels, s.Points[n-1].T, true
		}
	}
	return best, found
}

// isAddressName reports whether name is what an unnamed target is called:
// its URL's host:port (or the URL itself, or a generated target-N).
func isAddressName(name, rawURL string) bool {
	if strings.HasPrefix(name, "target-") {
		return true
	}
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" && (name == u.Host || name == rawURL) {
		return true
	}
	_, _, err := net.SplitHostPort(name)
	return err == nil
}

// Link is how one hop's dependency was tied to a service of the targets.
type Link struct {
	// Target is the hop's calling service; Dependency the dependency label
	// as the caller exports it.
	Target     string `json:"target"`
	Dependency string `json:"dependency"`
	// Service is the service the dependency was linked to ("" when none).
	Service string `json:"service,omitempty"`
	// How names the rule that linked it: LinkName, LinkAddress, LinkDNS,
	// LinkConfig; "" when unlinked.
	How string `json:"link,omitempty"`
	// Ambiguous lists the services the dependency matched equally well;
	// it is then not linked.
	Ambiguous []string `json:"ambiguous,omitempty"`
}

// Link rules, in order of precedence.
const (
	// LinkConfig: a links: entry of the config said so.
	LinkConfig = "config"
	// LinkName: the dependency is the service's name.
	LinkName = "name"
	// LinkAddress: the dependency is a target's host:port, host or URL.
	LinkAddress = "address"
	// LinkDNS: the dependency is the service's Kubernetes-style DNS name
	// (svc.ns.svc.cluster.local, svc.ns), Envoy's outbound|port||host
	// cluster or an authority with a port.
	LinkDNS = "dns"
)

// LinkRule is a config links: entry: the dependency label value
// Dependency is the service Service.
type LinkRule struct {
	Dependency string `yaml:"dependency"`
	Service    string `yaml:"service"`
}

// Linker ties dependency label values to the services of the targets.
type Linker struct {
	services map[string]Identity // service -> an identity of it (namespace)
	byAddr   map[string][]string // host:port, host, URL -> services
	rules    map[string]string   // dependency -> service, from the config
}

// NewLinker indexes the targets' identities and addresses.
func NewLinker(statuses []model.TargetStatus, ids map[string]Identity, rules []LinkRule) *Linker {
	l := &Linker{services: map[string]Identity{}, byAddr: map[string][]string{}, rules: map[string]string{}}
	for _, s := range statuses {
		id, ok := ids[s.Name]
		if !ok {
			id = Identity{Service: s.Name, Source: NameAddress}
		}
		if _, seen := l.services[id.Service]; !seen || id.Namespace != "" {
			l.services[id.Service] = id
		}
		for _, a := range addresses(s.Name, s.URL) {
			if !slices.Contains(l.byAddr[a], id.Service) {
				l.byAddr[a] = append(l.byAddr[a], id.Service)
			}
		}
	}
	for _, r := range rules {
		l.rules[r.Dependency] = r.Service
	}
	return l
}

// addresses are the forms a caller may use to name a target by where it
// is: host:port of its URL (and of its name), the bare host when it is
// not a loopback or wildcard address shared by every local target.
func addresses(name, rawURL string) []string {
	var out []string
	add := func(hostport string) {
		if hostport == "" || slices.Contains(out, hostport) {
			return
		}
		out = append(out, hostport)
		if h, _, err := net.SplitHostPort(hostport); err == nil && !sharedHost(h) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		add(u.Host)
	}
	if _, _, err := net.SplitHostPort(name); err == nil {
		add(name)
	}
	return out
}

// sharedHost is a host many unrelated local targets have in common, so
// it names none of them.
func sharedHost(h string) bool {
	if h == "localhost" || h == "" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// Resolve links a dependency label value to a service, by the first rule
// that matches: config, name, address, DNS.
func (l *Linker) Resolve(dep string) (service, how string, ambiguous []string) {
	if s, ok := l.rules[dep]; ok {
		return s, LinkConfig, nil
	}
	if _, ok := l.services[dep]; ok {
		return dep, LinkName, nil
	}
	addrs := []string{dep}
	if u, err := url.Parse(dep); err == nil && u.Host != "" {
		addrs = append(addrs, u.Host)
	}
	for _, a := range addrs {
		if ss := l.byAddr[a]; len(ss) == 1 {
			return ss[0], LinkAddress, nil
		} else if len(ss) > 1 {
			return "", "", sortedCopy(ss)
		}
	}
	if host := hostOf(dep); host != "" {
		if ss := l.byAddr[host]; len(ss) == 1 {
			return ss[0], LinkAddress, nil
		}
		if ss := l.dnsMatches(host); len(ss) == 1 {
			return ss[0], LinkDNS, nil
		} else if len(ss) > 1 {
			return "", "", ss
		}
	}
	return "", "", nil
}

// hostOf extracts the host a dependency label names: Envoy's
// outbound|9080||reviews.ns.svc.cluster.local cluster, a URL, an
// authority with a port, or a dotted name as it is.
func hostOf(dep string) string {
	if parts := strings.Split(dep, "|"); len(parts) == 4 {
		return parts[3]
	}
	if u, err := url.Parse(dep); err == nil && u.Host != "" {
		return u.Hostname()
	}
	if h, _, err := net.SplitHostPort(dep); err == nil {
		return h
	}
	if strings.Contains(dep, ".") {
		return dep
	}
	return ""
}

// dnsMatches lists the services a Kubernetes-style host names: its first
// label is the service, its second (when the host has one) the namespace,
// which must then agree with a namespace the service declares.
func (l *Linker) dnsMatches(host string) []string {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) < 2 {
		return nil
	}
	svc, ns := labels[0], labels[1]
	var out []string
	for name, id := range l.services {
		short, _, _ := strings.Cut(name, ".")
		if short != svc && name != svc {
			continue
		}
		if id.Namespace != "" && id.Namespace != ns {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func sortedCopy(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

// ServiceView folds rows and their timelines from targets to services:
// the rows of every target of one service that call one dependency become
// one row named by the service, and a dependency linked to a service is
// renamed to it, so that chains form across replicas, bare URLs and every
// naming scheme the Linker knows. links reports how each hop was linked
// (sorted by target, then dependency). When every target is its own
// service and no dependency is renamed, rows and timelines come back as
// they are.
func ServiceView(rows []model.Signals, timelines map[model.Key]*model.Timeline, ids map[string]Identity, l *Linker) ([]model.Signals, map[model.Key]*model.Timeline, []Link) {
	type group struct {
		key     model.Key
		members []int
	}
	var groups []*group
	index := map[model.Key]*group{}
	var links []Link
	linked := map[model.Key]bool{}
	trivial := true
	for i := range rows {
		r := &rows[i]
		svc := r.Target
		if id, ok := ids[r.Target]; ok && id.Service != "" {
			svc = id.Service
		}
		dep := r.Dependency
		lk := Link{Target: svc, Dependency: r.Dependency}
		if s, how, amb := l.Resolve(r.Dependency); s != "" {
			dep, lk.Service, lk.How = s, s, how
		} else {
			lk.Ambiguous = amb
		}
		k := model.Key{Target: svc, Dependency: dep}
		if !linked[model.Key{Target: svc, Dependency: r.Dependency}] {
			linked[model.Key{Target: svc, Dependency: r.Dependency}] = true
			links = append(links, lk)
		}
		if svc != r.Target || dep != r.Dependency {
			trivial = false
		}
		g := index[k]
		if g == nil {
			g = &group{key: k}
			index[k] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, i)
	}
	slices.SortFunc(links, func(a, b Link) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Dependency, b.Dependency))
	})
	if trivial && len(groups) == len(rows) {
		return rows, timelines, links
	}
	outRows := make([]model.Signals, 0, len(groups))
	outTl := make(map[model.Key]*model.Timeline, len(groups))
	for _, g := range groups {
		members := make([]model.Signals, len(g.members))
		var tls []*model.Timeline
		for j, i := range g.members {
			members[j] = rows[i]
			if tl, ok := timelines[rows[i].Key()]; ok {
				tls = append(tls, tl)
			}
		}
		var row model.Signals
		if len(members) == 1 {
			row = members[0]
			row.Target = g.key.Target
		} else {
			row = Aggregate(g.key.Target, members)
		}
		row.Dependency = g.key.Dependency
		outRows = append(outRows, row)
		if len(tls) > 0 {
			outTl[g.key] = AggregateTimeline(g.key, tls)
		}
	}
	return outRows, outTl, links
}

// ServiceFrame is f seen by service: its targets named (Identities, set on
// each status's Service and NameSource), its rows and timelines folded
// by ServiceView for chains and findings, and how each hop was linked.
// st may be nil (no target_info known).
func ServiceFrame(st *model.Store, f model.Frame, rules []LinkRule) (model.Frame, []Link, map[string]Identity) {
	ids := identitiesOf(st, f.Targets)
	out := f
	out.Targets = named(f.Targets, ids)
	var links []Link
	out.Rows, out.Timelines, links = ServiceView(f.Rows, f.Timelines, ids, NewLinker(f.Targets, ids, rules))
	return out, links, ids
}

// ServicesByName returns services with each Target renamed to its
// service's name, so that a chain's last dependency, linked to a service,
// finds the provider's own view (AttachProviders).
func ServicesByName(services []model.ServiceSignals, ids map[string]Identity) []model.ServiceSignals {
	out := make([]model.ServiceSignals, len(services))
	for i, s := range services {
		if id, ok := ids[s.Target]; ok && id.Service != "" {
			s.Target = id.Service
		}
		out[i] = s
	}
	return out
}

// aliasServers lets a dependency that names a target by its service (a
// bare-URL target that said who it is through target_info, a job) find
// that target's server-side view, as a dependency named like the target
// does. A service with several server targets (replicas) gets no alias:
// one replica's view is not the service's.
func aliasServers(ids map[string]Identity, servers map[string]*server) {
	if len(servers) == 0 || len(ids) == 0 {
		return
	}
	count := make(map[string]int, len(servers))
	for t := range servers {
		if id, ok := ids[t]; ok {
			count[id.Service]++
		}
	}
	alias := make(map[string]*server)
	for t, sv := range servers {
		id, ok := ids[t]
		if !ok || id.Service == t || count[id.Service] != 1 {
			continue
		}
		if _, taken := servers[id.Service]; !taken {
			alias[id.Service] = sv
		}
	}
	for name, sv := range alias {
		servers[name] = sv
	}
}

// named returns targets with their Service and NameSource set from ids,
// in a copy: the statuses belong to the caller.
func named(targets []model.TargetStatus, ids map[string]Identity) []model.TargetStatus {
	out := make([]model.TargetStatus, len(targets))
	for i, t := range targets {
		id := ids[t.Name]
		t.Service, t.NameSource = id.Service, id.Source
		out[i] = t
	}
	return out
}

// identitiesOf returns the identities targets already carry (BuildFrame
// and BuildReport name them), reading the store only for a target that
// carries none.
func identitiesOf(st *model.Store, targets []model.TargetStatus) map[string]Identity {
	for _, t := range targets {
		if t.NameSource == "" {
			return Identities(st, targets)
		}
	}
	ids := make(map[string]Identity, len(targets))
	for _, t := range targets {
		ids[t.Name] = Identity{Service: t.Service, Source: t.NameSource}
	}
	return ids
}
