package main

// The journal: everything the clients and the fault injector saw, in memory
// for the checker and, line by line, in events.jsonl of the run directory.

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

type ack struct {
	Producer  string    `json:"producer"`
	Key       string    `json:"key"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	At        time.Time `json:"at"`
}

type assignment struct {
	Member     string    `json:"member"`
	Sidecar    int       `json:"sidecar"`
	Generation int32     `json:"generation"`
	Partitions []int32   `json:"partitions"`
	At         time.Time `json:"at"`
}

type commit struct {
	Member     string    `json:"member"`
	Generation int32     `json:"generation"`
	Partition  int32     `json:"partition"`
	Offset     int64     `json:"offset"`
	At         time.Time `json:"at"`
}

type faultRun struct {
	fault
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Note  string    `json:"note,omitempty"`
}

type journal struct {
	mu          sync.Mutex
	out         *json.Encoder
	file        *os.File
	acks        []ack
	produceErrs map[string]int // producer -> records that failed
	assigns     []assignment
	commits     []commit
	samples     []observed
	commitErrs  int
	consumed    int
	faults      []faultRun
}

func newJournal(path string) (*journal, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &journal{out: json.NewEncoder(f), file: f, produceErrs: map[string]int{}}, nil
}

func (j *journal) log(event string, v any) {
	_ = j.out.Encode(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{event, v})
}

func (j *journal) ack(a ack) {
	j.mu.Lock()
	j.acks = append(j.acks, a)
	j.mu.Unlock()
}

func (j *journal) produceErr(producer, key string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.produceErrs[producer]++
	j.log("produce_error", map[string]string{"producer": producer, "key": key, "error": err.Error()})
}

func (j *journal) assigned(a assignment) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.assigns = append(j.assigns, a)
	j.log("assigned", a)
}

func (j *journal) note(event string, v any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log(event, v)
}

func (j *journal) committed(cs []commit) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		j.commits = append(j.commits, c)
		j.log("commit", c)
	}
}

func (j *journal) commitFailed(member string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.commitErrs++
	j.log("commit_error", map[string]string{"member": member, "error": err.Error()})
}

func (j *journal) addConsumed(n int) {
	j.mu.Lock()
	j.consumed += n
	j.mu.Unlock()
}

func (j *journal) faultDone(r faultRun) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.faults = append(j.faults, r)
	j.log("fault", r)
}

func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, a := range j.acks {
		j.log("ack", a)
	}
	_ = j.file.Close()
}
