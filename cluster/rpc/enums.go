package rpc

import (
	"fmt"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// EnumCheck finds enum fields set to numbers their enum does not declare:
// protobuf keeps such a number rather than refusing it, and code reading
// it would take it for some default.
type EnumCheck struct {
	skip  map[protoreflect.FullName]bool
	plans sync.Map // protoreflect.FullName -> *enumPlan
}

// NewEnumCheck returns a check of every enum field but the skipped ones
// (checked elsewhere, say one bulk item at a time).
func NewEnumCheck(skip ...protoreflect.FullName) *EnumCheck {
	c := &EnumCheck{skip: map[protoreflect.FullName]bool{}}
	for _, f := range skip {
		c.skip[f] = true
	}
	return c
}

// Check returns a *MalformedError naming the path ("items[3].action") of
// the first enum field of m, at any depth, set to an undeclared number, or
// nil.
func (c *EnumCheck) Check(m proto.Message) error {
	if m == nil {
		return nil
	}
	path, n, ok := c.badEnum(m.ProtoReflect(), "")
	if ok {
		return nil
	}
	return &MalformedError{Field: path, Reason: fmt.Sprintf("unknown enum value %d", n)}
}

// enumPlan lists the fields of a message type worth visiting: its enum
// fields and the message fields whose types hold enums somewhere.
type enumPlan struct {
	enums, messages []protoreflect.FieldDescriptor
}

func (c *EnumCheck) planOf(md protoreflect.MessageDescriptor) *enumPlan {
	if p, ok := c.plans.Load(md.FullName()); ok {
		return p.(*enumPlan)
	}
	p := &enumPlan{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case c.skip[fd.FullName()]:
		case fd.Kind() == protoreflect.EnumKind && !fd.IsMap():
			p.enums = append(p.enums, fd)
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.EnumKind:
			p.messages = append(p.messages, fd)
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind && c.holdsEnums(fd.MapValue().Message(), map[protoreflect.FullName]bool{}):
			p.messages = append(p.messages, fd)
		case !fd.IsMap() && fd.Kind() == protoreflect.MessageKind && c.holdsEnums(fd.Message(), map[protoreflect.FullName]bool{}):
			p.messages = append(p.messages, fd)
		}
	}
	c.plans.Store(md.FullName(), p)
	return p
}

// holdsEnums reports whether messages of type md can hold an enum field,
// at any depth.
func (c *EnumCheck) holdsEnums(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if c.skip[fd.FullName()] {
			continue
		}
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		switch fd.Kind() {
		case protoreflect.EnumKind:
			return true
		case protoreflect.MessageKind:
			if c.holdsEnums(fd.Message(), seen) {
				return true
			}
		}
	}
	return false
}

// badEnum walks m's set fields for an undeclared enum number.
func (c *EnumCheck) badEnum(m protoreflect.Message, prefix string) (string, protoreflect.EnumNumber, bool) {
	p := c.planOf(m.Descriptor())
	for _, fd := range p.enums {
		if !m.Has(fd) {
			continue
		}
		values := fd.Enum().Values()
		if fd.IsList() {
			l := m.Get(fd).List()
			for i := range l.Len() {
				if n := l.Get(i).Enum(); values.ByNumber(n) == nil {
					return prefix + string(fd.Name()) + "[" + strconv.Itoa(i) + "]", n, false
				}
			}
			continue
		}
		if n := m.Get(fd).Enum(); values.ByNumber(n) == nil {
			return prefix + string(fd.Name()), n, false
		}
	}
	for _, fd := range p.messages {
		if !m.Has(fd) {
			continue
		}
		name := prefix + string(fd.Name())
		switch v := m.Get(fd); {
		case fd.IsMap():
			var path string
			var num protoreflect.EnumNumber
			ok := true
			v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				key := name + "[" + k.String() + "]"
				if fd.MapValue().Kind() == protoreflect.EnumKind {
					if n := v.Enum(); fd.MapValue().Enum().Values().ByNumber(n) == nil {
						path, num, ok = key, n, false
					}
				} else {
					path, num, ok = c.badEnum(v.Message(), key+".")
				}
				return ok
			})
			if !ok {
				return path, num, false
			}
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if path, n, ok := c.badEnum(l.Get(i).Message(), name+"["+strconv.Itoa(i)+"]."); !ok {
					return path, n, false
				}
			}
		default:
			if path, n, ok := c.badEnum(v.Message(), name+"."); !ok {
				return path, n, false
			}
		}
	}
	return "", 0, true
}
