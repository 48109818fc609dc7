package dump

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"
)

// File layout (docs/dump-format.md):
//
//	header: "RTOPDUMP" | version uint16 LE | flags uint16 LE | crc32c of the first 12 bytes
//	frame:  sync "\xf5RTF" | length uint32 LE | crc32c uint32 LE of the body | body (length bytes)
//	body (versions 1-3): kind byte | time varint (Unix ns) | base uvarint (ns back to the base frame of the same target, 0 for a key frame)
//	        | target (uvarint length, bytes) | content type (uvarint length, bytes; empty in a delta: the base's)
//	        | body length uvarint | body crc32c uint32 LE | payload
//	body (version 4): per kind, see appendFrameV
const (
	magic = "RTOPDUMP"
	// Version is the format version this package writes and the newest it
	// reads. Version 2 adds index frames (kind 4); version 1 files are
	// read by scanning every frame, as before. Version 3 codes a delta
	// frame's numbers against predictions and its kinds against the slot's
	// last kind (docs/dump-format.md); version 1 and 2 deltas are still
	// decoded as they were written. Version 4 shortens a delta frame's
	// header (its target by number, its time and body length against its
	// base's) and the index entries (docs/dump-format.md). Version 5
	// checks a delta frame by its numbers (numsCheck), not its rendered
	// body, so that neither the writer nor a reader of its values needs
	// the body's text. A file has one version, in its header.
	Version = 5

	headerSize      = 16
	frameHeaderSize = 12

	// MaxBodySize bounds a decoded body (and so what a damaged or hostile
	// file can make the reader allocate).
	MaxBodySize = 256 << 20
	// maxFrameSize bounds a stored frame.
	maxFrameSize = MaxBodySize + 1<<20

	maxTargetLen      = 1024
	maxContentTypeLen = 1024

	// maxRatio and minBound bound the body a frame may declare by what it
	// stores, so that a reader refuses a hostile frame before allocating
	// its body (three 255 MiB comment bodies in an 86 KB file made
	// analyze use 4.8 GB). A key frame may declare at most
	// max(minBound, maxRatio × its payload); a delta at most its base's
	// bound plus maxRatio × its payload. Real expositions compress 5-30:1
	// as key frames (numbers and label values vary); only a body of
	// repeated bytes goes past 1024:1, and the writer pads such a payload
	// with a zstd skippable frame so that its own output always passes.
	maxRatio = 1024
	minBound = 64 << 10
)

// frameBound is the largest body a frame with a payload of payLen bytes
// may declare: base is its base frame's bound (0 for a key frame).
func frameBound(base int64, payLen int) int64 {
	if base == 0 {
		return max(minBound, maxRatio*int64(payLen))
	}
	return min(base+maxRatio*int64(payLen), maxFrameSize)
}

// padPayload appends a zstd skippable frame to payload (which ends with a
// zstd frame) so that frameBound(base, len) covers bodyLen; decoders skip
// it. Only bodies of repeated bytes need it.
func padPayload(payload []byte, base int64, bodyLen int) []byte {
	if frameBound(base, len(payload)) >= int64(bodyLen) {
		return payload
	}
	need := (int64(bodyLen) - base + maxRatio - 1) / maxRatio
	if base == 0 {
		need = (int64(bodyLen) + maxRatio - 1) / maxRatio
	}
	pad := max(need-int64(len(payload)), 8)
	payload = append(payload, 0x50, 0x2a, 0x4d, 0x18) // skippable frame magic
	payload = binary.LittleEndian.AppendUint32(payload, uint32(pad-8))
	return append(payload, make([]byte, pad-8)...)
}

var syncMark = [4]byte{0xf5, 'R', 'T', 'F'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame kinds.
const (
	kindKey   = 1 // payload: zstd of the body
	kindDelta = 2 // payload: dict id uvarint, zstd of the delta from the base frame
	kindError = 3 // payload: the error of a failed scrape, as text
	kindIndex = 4 // payload: the index of the frames since the previous index frame (index.go)
)

// maxErrorLen bounds the text of a failed scrape.
const maxErrorLen = 4096

func appendFileHeader(dst []byte) []byte {
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint16(dst, Version)
	dst = binary.LittleEndian.AppendUint16(dst, 0)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[len(dst)-12:], castagnoli))
}

// checkFileHeader validates the first headerSize bytes of a dump.
func checkFileHeader(b []byte) error {
	if len(b) < headerSize || string(b[:8]) != magic {
		return fmt.Errorf("not a retrytop dump (no %q header)", magic)
	}
	if crc32.Checksum(b[:12], castagnoli) != binary.LittleEndian.Uint32(b[12:16]) {
		return fmt.Errorf("dump header is damaged (checksum mismatch)")
	}
	if v := binary.LittleEndian.Uint16(b[8:10]); v < 1 || v > Version {
		if v > Version {
			return fmt.Errorf("dump format version %d is newer than this retrytop reads (%d); upgrade retrytop", v, Version)
		}
		return fmt.Errorf("dump format version %d is not supported", v)
	}
	return nil
}

// meta is a frame's decoded body header.
type meta struct {
	kind        byte
	timeNs      int64
	base        uint64 // ns back from this frame's time to its base frame's (same target)
	target      string
	contentType string
	bodyLen     uint64
	bodyCRC     uint32
	payload     []byte
	// Version 4: tid is the target's number in the file (a key or error
	// frame names it, a delta frame gives only the number); a delta frame
	// stores its step (base) as stepRes, its difference from its base's
	// step rounded (predictStep), and its body length as lenDiff, the
	// difference from its base's. parseMeta leaves both unresolved
	// (Reader.add resolves them against the base).
	tid     uint64
	stepRes int64
	lenDiff int64
}

// maxTID bounds a version 4 target number: a hostile frame cannot make
// the reader keep more names than that (each is at most maxTargetLen).
const maxTID = 1 << 20

// stepQuantum: a version 4 delta's step is predicted as its base's step
// rounded to this, so that a target scraped every second with a few
// milliseconds of jitter stores the jitter (3-4 bytes), not the step (5).
const stepQuantum = int64(100 * time.Millisecond)

// predictStep is the step a version 4 delta is predicted to have after a
// base whose own step was prev (0 for a key frame).
func predictStep(prev int64) int64 {
	if prev <= 0 || prev > 1<<62 {
		return 0
	}
	return (prev + stepQuantum/2) / stepQuantum * stepQuantum
}

// baseLink is what a version 3 delta frame stores in its time field: 13
// bits of its base frame's body checksum, so that a reader scanning the
// file can tell its base (the target's newest frame before it) from an
// older frame when one in between was lost. The time is the base's plus
// the frame's base field; the absolute time took 9 bytes of every delta
// frame, the link takes 2.
func baseLink(baseCRC uint32) int64 { return int64(baseCRC & 0x1fff) }

// appendFrame appends frame m in the format this package writes.
func appendFrame(dst []byte, m *meta) []byte { return appendFrameV(dst, m, Version) }

// appendFrameV appends frame m in format version v. Version 4 writes per
// kind only what a reader cannot derive:
//
//	key:   kind | time varint | tid uvarint | target (uvarint length, bytes) | content type (uvarint length, bytes)
//	       | body length uvarint | body crc32c uint32 | payload
//	delta: kind | link uint16 (baseLink) | tid uvarint | stepRes varint | lenDiff varint | body crc32c uint32 | payload
//	error: kind | time varint | tid uvarint | target (uvarint length, bytes) | payload (the error)
//	index: kind | time varint | payload
//
// The link has a fixed size so that an index can tell a frame's header
// size from what it lists (payloadLen).
func appendFrameV(dst []byte, m *meta, v uint16) []byte {
	start := len(dst)
	dst = append(dst, syncMark[:]...)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length and crc, filled below
	body := len(dst)
	dst = appendMeta(dst, m, v)
	dst = append(dst, m.payload...)
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(dst)-body))
	binary.LittleEndian.PutUint32(dst[start+8:], crc32.Checksum(dst[body:], castagnoli))
	return dst
}

// appendMeta appends a frame body's header (everything before the
// payload) in format version v.
func appendMeta(dst []byte, m *meta, v uint16) []byte {
	dst = append(dst, m.kind)
	if v < 4 {
		dst = binary.AppendVarint(dst, m.timeNs)
		dst = binary.AppendUvarint(dst, m.base)
		dst = binary.AppendUvarint(dst, uint64(len(m.target)))
		dst = append(dst, m.target...)
		dst = binary.AppendUvarint(dst, uint64(len(m.contentType)))
		dst = append(dst, m.contentType...)
		dst = binary.AppendUvarint(dst, m.bodyLen)
		return binary.LittleEndian.AppendUint32(dst, m.bodyCRC)
	}
	if m.kind == kindDelta {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(m.timeNs)) // the link
		dst = binary.AppendUvarint(dst, m.tid)
		dst = binary.AppendVarint(dst, m.stepRes)
		dst = binary.AppendVarint(dst, m.lenDiff)
		return binary.LittleEndian.AppendUint32(dst, m.bodyCRC)
	}
	dst = binary.AppendVarint(dst, m.timeNs)
	if m.kind == kindIndex {
		return dst
	}
	dst = binary.AppendUvarint(dst, m.tid)
	dst = binary.AppendUvarint(dst, uint64(len(m.target)))
	dst = append(dst, m.target...)
	if m.kind == kindError {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(m.contentType)))
	dst = append(dst, m.contentType...)
	dst = binary.AppendUvarint(dst, m.bodyLen)
	return binary.LittleEndian.AppendUint32(dst, m.bodyCRC)
}

// parseMeta decodes a frame body whose checksum has been verified, in
// the format this package writes.
func parseMeta(b []byte) (meta, error) { return parseMetaV(b, Version) }

// parseMetaV decodes a frame body of format version v whose checksum has
// been verified. A version 4 delta frame's time (its link), step and body
// length are left for Reader.add to resolve against its base.
func parseMetaV(b []byte, v uint16) (meta, error) {
	if v >= 4 {
		return parseMeta4(b)
	}
	var m meta
	r := byteReader{b: b}
	m.kind = r.byte()
	m.timeNs = r.varint()
	m.base = r.uvarint()
	tl := r.uvarint()
	if tl > maxTargetLen {
		return m, fmt.Errorf("target name of %d bytes", tl)
	}
	m.target = string(r.bytes(tl))
	cl := r.uvarint()
	if cl > maxContentTypeLen {
		return m, fmt.Errorf("content type of %d bytes", cl)
	}
	m.contentType = string(r.bytes(cl))
	m.bodyLen = r.uvarint()
	if c := r.bytes(4); len(c) == 4 {
		m.bodyCRC = binary.LittleEndian.Uint32(c)
	}
	m.payload = r.rest()
	if r.err != nil {
		return m, fmt.Errorf("frame header: %w", r.err)
	}
	if m.kind == kindIndex {
		if m.base != 0 || m.target != "" || m.bodyLen != 0 {
			return m, fmt.Errorf("malformed index frame")
		}
		return m, nil
	}
	switch {
	case m.kind != kindKey && m.kind != kindDelta && m.kind != kindError:
		return m, fmt.Errorf("unknown frame kind %d", m.kind)
	case m.kind != kindDelta && m.base != 0:
		return m, fmt.Errorf("key frame with a base")
	case m.kind == kindError && (m.bodyLen != 0 || len(m.payload) > maxErrorLen):
		return m, fmt.Errorf("malformed error frame")
	case m.kind == kindDelta && m.base == 0:
		return m, fmt.Errorf("delta frame without a base")
	case m.bodyLen > MaxBodySize:
		return m, fmt.Errorf("body of %d bytes exceeds the limit of %d", m.bodyLen, MaxBodySize)
	case m.target == "":
		return m, fmt.Errorf("frame without a target")
	}
	return m, nil
}

func parseMeta4(b []byte) (meta, error) {
	var m meta
	r := byteReader{b: b}
	m.kind = r.byte()
	switch m.kind {
	case kindDelta:
		if l := r.bytes(2); len(l) == 2 {
			m.timeNs = int64(binary.LittleEndian.Uint16(l))
		}
		m.tid = r.uvarint()
		m.stepRes = r.varint()
		m.lenDiff = r.varint()
	case kindKey, kindError, kindIndex:
		m.timeNs = r.varint()
		if m.kind == kindIndex {
			break
		}
		m.tid = r.uvarint()
		tl := r.uvarint()
		if tl > maxTargetLen {
			return m, fmt.Errorf("target name of %d bytes", tl)
		}
		m.target = string(r.bytes(tl))
		if m.kind == kindError {
			break
		}
		cl := r.uvarint()
		if cl > maxContentTypeLen {
			return m, fmt.Errorf("content type of %d bytes", cl)
		}
		m.contentType = string(r.bytes(cl))
		m.bodyLen = r.uvarint()
	default:
		return m, fmt.Errorf("unknown frame kind %d", m.kind)
	}
	if m.kind == kindKey || m.kind == kindDelta {
		if c := r.bytes(4); len(c) == 4 {
			m.bodyCRC = binary.LittleEndian.Uint32(c)
		}
	}
	m.payload = r.rest()
	if r.err != nil {
		return m, fmt.Errorf("frame header: %w", r.err)
	}
	switch {
	case m.kind == kindIndex:
	case m.tid > maxTID:
		return m, fmt.Errorf("target number %d exceeds the limit of %d", m.tid, maxTID)
	case m.kind == kindError && len(m.payload) > maxErrorLen:
		return m, fmt.Errorf("malformed error frame")
	case m.bodyLen > MaxBodySize:
		return m, fmt.Errorf("body of %d bytes exceeds the limit of %d", m.bodyLen, MaxBodySize)
	case m.kind != kindDelta && m.target == "":
		return m, fmt.Errorf("frame without a target")
	}
	return m, nil
}
