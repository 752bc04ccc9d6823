# For the bench scripts: figures read out of the lines that the timed
# programs print ("name=value ..."). Source it.
#   ... | field NAME     the value of NAME= on the last line that has it
#   ... | median         the median of the numbers on stdin, one a line ("-" for none)
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -n 1; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
