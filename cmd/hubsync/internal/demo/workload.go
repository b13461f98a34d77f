package demo

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/hubsync/hubsync/mapping"
)

// Partition says which side edits a record after its creation. Edits of one
// field on both sides within the sync latency may legitimately end differently
// on each side, so the workload never edits a record on both sides.
type Partition int

// The partitions.
const (
	// PartitionLocal records are created, updated and deleted locally only.
	PartitionLocal Partition = iota
	// PartitionHubSpotEdited records are created locally and, once they have
	// reached HubSpot, edited (and some deleted) by HubSpot users only.
	PartitionHubSpotEdited
	// PartitionHubSpotCreated records are created by HubSpot users (contacts)
	// and edited, deleted or merged there only.
	PartitionHubSpotCreated
)

// OpKind is what one workload step does.
type OpKind int

// The workload steps.
const (
	LocalCreate OpKind = iota
	LocalUpdate
	LocalDelete
	HubSpotCreate
	HubSpotUpdate
	HubSpotDelete
	HubSpotMerge
)

var opKindNames = [...]string{"local create", "local update", "local delete", "HubSpot create", "HubSpot update", "HubSpot delete", "HubSpot merge"}

// String names the step kind.
func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// Local reports whether the step is a local change (else a HubSpot user edit).
func (k OpKind) Local() bool { return k <= LocalDelete }

// RecordSpec is one record of the workload.
type RecordSpec struct {
	ObjectType string
	Partition  Partition
	// Hot records are updated many times in a row, so coalescing shows.
	Hot bool
}

// Op is one workload step.
type Op struct {
	Kind OpKind
	// Ref is the record's index in Workload.Records; for HubSpotMerge the
	// surviving (primary) record.
	Ref int
	// Merged is, for HubSpotMerge, the record merged into Ref.
	Merged int
	// Fields are a LocalCreate's fields or a LocalUpdate's patch (a nil value
	// removes the field), by local field name.
	Fields map[string]any
	// Props are a HubSpotCreate's or HubSpotUpdate's properties ("" clears one).
	Props map[string]string
}

// Workload is a generated, repeatable two-way workload.
type Workload struct {
	Records []RecordSpec
	// Local are the local changes, in order.
	Local []Op
	// HubSpot are the HubSpot user edits, in order. A HubSpotUpdate or
	// HubSpotDelete of a PartitionHubSpotEdited record must wait until the
	// record has reached HubSpot; the merge waits until both contacts exist
	// locally.
	HubSpot []Op
}

// Counts tallies the workload's steps by kind.
func (w Workload) Counts() map[OpKind]int {
	c := map[OpKind]int{}
	for _, op := range w.Local {
		c[op.Kind]++
	}
	for _, op := range w.HubSpot {
		c[op.Kind]++
	}
	return c
}

// Workload sizing, as fractions of the number of local changes.
const (
	hotBurst = 15 // updates in a row of one hot record
)

// objectTypes are the types the workload writes, with their share of creates.
var objectTypes = []string{"contacts", "contacts", "companies", "deals"}

// Generate returns the workload for seed with about changes local changes
// (creates, updates and deletes) and a tenth as many HubSpot user edits.
// changes below 40 is raised to 40.
func Generate(seed int64, changes int) Workload {
	changes = max(changes, 40)
	g := &gen{rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)*0x9e3779b97f4a7c15+1))}
	creates := changes * 2 / 5
	deletes := changes / 20
	updates := changes - creates - deletes
	edited := max(3, creates/10)
	hot := max(1, creates/60)
	if hot*hotBurst > updates/2 {
		hot = max(1, updates/2/hotBurst)
	}

	var w Workload
	newRecord := func(t string, p Partition) int {
		w.Records = append(w.Records, RecordSpec{ObjectType: t, Partition: p})
		return len(w.Records) - 1
	}

	// Records HubSpot users will edit go first, so they reach HubSpot early.
	var editedRefs []int
	for i := range edited {
		ref := newRecord(objectTypes[i%len(objectTypes)], PartitionHubSpotEdited)
		editedRefs = append(editedRefs, ref)
		w.Local = append(w.Local, Op{Kind: LocalCreate, Ref: ref, Fields: g.fields(w.Records[ref].ObjectType, ref)})
	}
	creates -= edited

	var live []int  // live, not hot, local-partition records
	var hotQ []int  // hot records created whose burst is still to come
	hotLeft := hot  // hot records still to create
	burstsLeft := 0 // hot updates still to emit
	for creates+updates+deletes > 0 {
		wc, wu, wd := creates, 0, 0
		if len(live) > 0 || len(hotQ) > 0 {
			wu = updates
		}
		if len(live) > 0 {
			wd = deletes
		}
		if wc+wu+wd == 0 {
			// Only updates or deletes are left and nothing to apply them to:
			// turn one of them into a create.
			creates++
			if updates > 0 {
				updates--
			} else {
				deletes--
			}
			continue
		}
		r := g.rng.IntN(wc + wu + wd)
		switch {
		case r < wc:
			ref := newRecord(objectTypes[g.rng.IntN(len(objectTypes))], PartitionLocal)
			w.Local = append(w.Local, Op{Kind: LocalCreate, Ref: ref, Fields: g.fields(w.Records[ref].ObjectType, ref)})
			creates--
			if hotLeft > 0 && g.rng.IntN(max(1, creates/hotLeft)) == 0 {
				w.Records[ref].Hot = true
				hotQ = append(hotQ, ref)
				hotLeft--
				burstsLeft += hotBurst
			} else {
				live = append(live, ref)
			}
		case r < wc+wu:
			if len(hotQ) > 0 && (len(live) == 0 || g.rng.IntN(max(1, updates)) < burstsLeft) {
				ref := hotQ[0]
				hotQ = hotQ[1:]
				n := min(hotBurst, updates)
				for i := range n {
					w.Local = append(w.Local, Op{Kind: LocalUpdate, Ref: ref, Fields: g.hotPatch(w.Records[ref].ObjectType, i)})
				}
				updates -= n
				burstsLeft -= hotBurst
				continue
			}
			ref := live[g.rng.IntN(len(live))]
			w.Local = append(w.Local, Op{Kind: LocalUpdate, Ref: ref, Fields: g.patch(w.Records[ref].ObjectType)})
			updates--
		default:
			// Half the deletes hit the newest record, often before it reached
			// HubSpot (the create and delete coalesce to nothing).
			i := len(live) - 1
			if g.rng.IntN(2) == 0 {
				i = g.rng.IntN(len(live))
			}
			w.Local = append(w.Local, Op{Kind: LocalDelete, Ref: live[i]})
			live = slices.Delete(live, i, i+1)
			deletes--
		}
	}
	// Hot records whose burst did not fit stay plain local records.
	for _, ref := range hotQ {
		w.Records[ref].Hot = false
	}

	// HubSpot side: new contacts created by users, edits of the records
	// created locally (once synced), a few deletes, and one merge.
	hcreates := max(4, changes/50)
	var created []int
	for range hcreates {
		ref := newRecord("contacts", PartitionHubSpotCreated)
		created = append(created, ref)
		w.HubSpot = append(w.HubSpot, Op{Kind: HubSpotCreate, Ref: ref, Props: g.hubspotContact(ref)})
	}
	var edits []Op
	deleteEvery := 10
	for i, ref := range editedRefs {
		t := w.Records[ref].ObjectType
		for range 1 + g.rng.IntN(2) {
			edits = append(edits, Op{Kind: HubSpotUpdate, Ref: ref, Props: g.hubspotPatch(t, true)})
		}
		if i%deleteEvery == deleteEvery-1 {
			edits = append(edits, Op{Kind: HubSpotDelete, Ref: ref})
		}
	}
	// The first two created contacts are merged at the end; the others get
	// edits, and the last one is deleted.
	for _, ref := range created[2:] {
		if g.rng.IntN(2) == 0 {
			edits = append(edits, Op{Kind: HubSpotUpdate, Ref: ref, Props: g.hubspotPatch("contacts", false)})
		}
	}
	edits = append(edits, Op{Kind: HubSpotDelete, Ref: created[len(created)-1]})
	// Interleave the edits of different records, keeping each record's order.
	w.HubSpot = append(w.HubSpot, g.interleave(edits)...)
	w.HubSpot = append(w.HubSpot, Op{Kind: HubSpotMerge, Ref: created[0], Merged: created[1]})
	return w
}

// gen makes deterministic field values.
type gen struct {
	rng *rand.Rand
	seq int
}

func (g *gen) next() int { g.seq++; return g.seq }

var (
	firstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Niklaus"}
	lastNames  = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Wirth"}
	stages     = []string{"subscriber", "lead", "marketingqualifiedlead", "salesqualifiedlead", "opportunity", "customer"}
	industries = []string{"COMPUTER_SOFTWARE", "BANKING", "RETAIL", "BIOTECHNOLOGY", "LOGISTICS"}
	cities     = []string{"Lisbon", "Oslo", "Kyoto", "Austin", "Nairobi", "Quito", "Tallinn"}
	dealStages = []string{"appointmentscheduled", "qualifiedtobuy", "presentationscheduled", "decisionmakerboughtin", "contractsent", "closedwon"}
)

func pick[T any](g *gen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

// fields are a new local record's fields. Every mapped field is set, plus an
// unmapped "notes" field that must never reach HubSpot.
func (g *gen) fields(objectType string, ref int) map[string]any {
	switch objectType {
	case "contacts":
		return map[string]any{
			"email":           fmt.Sprintf("contact%05d@demo.example", ref),
			"first_name":      pick(g, firstNames),
			"last_name":       pick(g, lastNames),
			"phone":           fmt.Sprintf("+1-555-%06d", g.next()),
			"company":         pick(g, lastNames) + " Ltd",
			"lifecycle_stage": pick(g, stages),
			"notes":           "created locally",
		}
	case "companies":
		return map[string]any{
			"name":      fmt.Sprintf("%s %s %d", pick(g, lastNames), pick(g, []string{"Labs", "Systems", "Works"}), ref),
			"domain":    fmt.Sprintf("company%05d.demo.example", ref),
			"industry":  pick(g, industries),
			"city":      pick(g, cities),
			"employees": float64(5 + g.rng.IntN(5000)),
			"notes":     "created locally",
		}
	default: // deals
		return map[string]any{
			"name":       fmt.Sprintf("Deal %d", ref),
			"amount":     float64(100+g.rng.IntN(100000)) + 0.5*float64(g.rng.IntN(2)),
			"stage":      pick(g, dealStages),
			"pipeline":   "default",
			"close_date": fmt.Sprintf("2026-%02d-%02d", 1+g.rng.IntN(12), 1+g.rng.IntN(28)),
			"notes":      "created locally",
		}
	}
}

// patch changes one to three fields of a local record; sometimes it removes an
// optional field or touches only the unmapped "notes".
func (g *gen) patch(objectType string) map[string]any {
	p := map[string]any{}
	n := 1 + g.rng.IntN(3)
	for range n {
		switch objectType {
		case "contacts":
			switch g.rng.IntN(5) {
			case 0:
				p["first_name"] = pick(g, firstNames)
			case 1:
				p["last_name"] = pick(g, lastNames)
			case 2:
				p["phone"] = fmt.Sprintf("+1-555-%06d", g.next())
			case 3:
				p["lifecycle_stage"] = pick(g, stages)
			default:
				p["company"] = pick(g, lastNames) + " Group"
			}
		case "companies":
			switch g.rng.IntN(4) {
			case 0:
				p["city"] = pick(g, cities)
			case 1:
				p["employees"] = float64(5 + g.rng.IntN(5000))
			case 2:
				p["industry"] = pick(g, industries)
			default:
				p["name"] = fmt.Sprintf("%s Holdings %d", pick(g, lastNames), g.next())
			}
		default:
			switch g.rng.IntN(3) {
			case 0:
				p["amount"] = float64(100 + g.rng.IntN(100000))
			case 1:
				p["stage"] = pick(g, dealStages)
			default:
				p["close_date"] = fmt.Sprintf("2027-%02d-%02d", 1+g.rng.IntN(12), 1+g.rng.IntN(28))
			}
		}
	}
	switch g.rng.IntN(10) {
	case 0:
		p["notes"] = fmt.Sprintf("local note %d", g.next())
	case 1:
		opt := map[string]string{"contacts": "phone", "companies": "city", "deals": "close_date"}[objectType]
		p[opt] = nil
	}
	return p
}

// hotPatch is update i of a hot record's burst: the same fields again and again.
func (g *gen) hotPatch(objectType string, i int) map[string]any {
	switch objectType {
	case "contacts":
		return map[string]any{"lifecycle_stage": stages[i%len(stages)], "phone": fmt.Sprintf("+1-555-%06d", g.next())}
	case "companies":
		return map[string]any{"employees": float64(100 + i)}
	default:
		return map[string]any{"amount": float64(1000 + 250*i), "stage": dealStages[i%len(dealStages)]}
	}
}

// hubspotContact are a HubSpot user's new contact's properties. Every mapped
// property is set, so a merge moves none of them (the simulator, like HubSpot,
// sends no propertyChange events for properties a merge fills in).
func (g *gen) hubspotContact(ref int) map[string]string {
	return map[string]string{
		"email":          fmt.Sprintf("hs-contact%05d@demo.example", ref),
		"firstname":      pick(g, firstNames),
		"lastname":       pick(g, lastNames),
		"phone":          fmt.Sprintf("+44-20-%06d", g.next()),
		"company":        pick(g, lastNames) + " plc",
		"lifecyclestage": pick(g, stages),
	}
}

// hubspotPatch is a HubSpot user's edit of one or two properties. clear allows
// clearing an optional property.
func (g *gen) hubspotPatch(objectType string, clear bool) map[string]string {
	p := map[string]string{}
	switch objectType {
	case "contacts":
		p["lifecyclestage"] = pick(g, stages)
		if g.rng.IntN(2) == 0 {
			p["firstname"] = pick(g, firstNames) + "-hs"
		}
		if clear && g.rng.IntN(8) == 0 {
			p["phone"] = ""
		}
	case "companies":
		p["city"] = pick(g, cities)
		if g.rng.IntN(2) == 0 {
			p["numberofemployees"] = strconv.Itoa(10 + g.rng.IntN(900))
		}
	default:
		p["amount"] = strconv.Itoa(500 + g.rng.IntN(50000))
		if g.rng.IntN(2) == 0 {
			p["dealstage"] = pick(g, dealStages)
		}
		if clear && g.rng.IntN(8) == 0 {
			p["closedate"] = ""
		}
	}
	return p
}

// interleave shuffles ops across records while keeping each record's own order.
func (g *gen) interleave(ops []Op) []Op {
	byRef := map[int][]Op{}
	var refs []int
	for _, op := range ops {
		if _, ok := byRef[op.Ref]; !ok {
			refs = append(refs, op.Ref)
		}
		byRef[op.Ref] = append(byRef[op.Ref], op)
	}
	out := make([]Op, 0, len(ops))
	for len(refs) > 0 {
		i := g.rng.IntN(len(refs))
		ref := refs[i]
		out = append(out, byRef[ref][0])
		byRef[ref] = byRef[ref][1:]
		if len(byRef[ref]) == 0 {
			refs = slices.Delete(refs, i, i+1)
		}
	}
	return out
}

// Expected is what the workload expects of one record at the end.
type Expected struct {
	Ref  int
	Spec RecordSpec
	// Live is false for a record deleted on either side or merged away.
	Live bool
	// Props are the mapped HubSpot properties the record must have on both
	// sides ("" or absent for an unset one).
	Props map[string]string
}

// Expect replays the workload record by record and returns the expected end
// state of every record, by Ref. Each record is edited by one side only, so
// its own steps are totally ordered.
func (w Workload) Expect(m *mapping.Set) ([]Expected, error) {
	out := make([]Expected, len(w.Records))
	for i, spec := range w.Records {
		out[i] = Expected{Ref: i, Spec: spec, Props: map[string]string{}}
	}
	local := map[int]map[string]any{}
	apply := func(op Op) error {
		e := &out[op.Ref]
		obj, ok := m.Lookup(e.Spec.ObjectType)
		if !ok {
			return fmt.Errorf("demo: object type %s is not mapped", e.Spec.ObjectType)
		}
		switch op.Kind {
		case LocalCreate, LocalUpdate:
			f := local[op.Ref]
			if f == nil {
				f = map[string]any{}
				local[op.Ref] = f
			}
			for k, v := range op.Fields {
				if v == nil {
					delete(f, k)
				} else {
					f[k] = v
				}
			}
			e.Live = true
			props, err := obj.ToHubSpot(f)
			if err != nil {
				return err
			}
			e.Props = props
		case LocalDelete, HubSpotDelete:
			e.Live = false
		case HubSpotCreate, HubSpotUpdate:
			e.Live = true
			for k, v := range op.Props {
				if _, mapped := obj.LocalField(k); mapped {
					e.Props[k] = v
				}
			}
		case HubSpotMerge:
			merged := &out[op.Merged]
			for k, v := range merged.Props {
				if e.Props[k] == "" && k != obj.IDProperty {
					e.Props[k] = v
				}
			}
			merged.Live = false
		}
		return nil
	}
	for _, op := range w.Local {
		if err := apply(op); err != nil {
			return nil, err
		}
	}
	for _, op := range w.HubSpot {
		if err := apply(op); err != nil {
			return nil, err
		}
	}
	for i := range out {
		out[i].Props = normalizeProps(out[i].Props)
	}
	return out, nil
}

// normalizeProps drops empty values, so "" and absent compare equal.
func normalizeProps(p map[string]string) map[string]string {
	out := make(map[string]string, len(p))
	for k, v := range maps.All(p) {
		if v != "" {
			out[k] = v
		}
	}
	return out
}
