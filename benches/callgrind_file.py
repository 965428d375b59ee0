"""One callgrind output file read in one pass (for benches/instructions.sh):
its instructions, the calls made to each function, and the inclusive
instructions of the calls made into a set of functions from outside it.

    ir, calls, into = read(path, {"synapse::report::Report::new"})
"""


def read(path, inside=()):
    ir, into, calls, names = 0, 0, {}, {}
    fn = cfn = None
    counting = False  # the line after `calls=`: position, then inclusive cost
    for line in open(path):
        if counting:
            into += int(line.split()[1])
            counting = False
        elif line.startswith("summary:"):
            ir = int(line.split()[1])
        elif line.startswith(("fn=", "cfn=")):  # a name is given once, then "(id)"
            key, _, rest = line.split("=", 1)[1].strip().partition(" ")
            if rest:
                names[key] = rest
            if line.startswith("fn="):
                fn = names.get(key, key)
            else:
                cfn = names.get(key, key)
        elif line.startswith("calls="):
            calls[cfn] = calls.get(cfn, 0) + int(line[6:].split()[0])
            counting = cfn in inside and fn not in inside
    return ir, calls, into
