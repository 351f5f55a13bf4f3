#!/usr/bin/perl
# SPDX-License-Identifier: MIT
# alloc.pl: an allocation-heavy Perl workload for t_progs.sh (hashes, arrays, regexes,
# sorting, string building, references). Every walk over a hash sorts its keys, so the
# output does not depend on the hash seed.
use strict;
use warnings;

my $n = shift // 150000;

# 1. words and a hash of counts
my @words = map { sprintf("w%05d_%s", $_ % 40000, chr(97 + $_ % 26) x (1 + $_ % 11)) } 1 .. $n;
my %count;
$count{ substr($_, 0, 4) }++ for @words;
my $sig = 0;
for my $k (sort keys %count) {
  $sig = ($sig * 31 + length($k) + $count{$k}) % 1000000007;
}
print "hash ", scalar(keys %count), " $sig\n";

# 2. regexes: captures, substitution, split/join, tr
my ($caps, $subs) = (0, 0);
for my $w (@words) {
  if ($w =~ /^w(\d{3})(\d\d)_([a-z])\3*$/) { $caps += $1 + $2 + ord($3); }
  (my $x = $w) =~ s/([aeiou])/<$1>/g and $subs++;
}
my $text = join(",", @words[0 .. 19999]);
my @parts = split /,w0/, $text;
(my $tr = $text) =~ tr/a-m/n-z/;
print "regex $caps $subs ", scalar(@parts), " ", length($tr), " ", substr($tr, 0, 40), "\n";

# 3. sort: numeric, string, multi-key, Schwartzian transform
my @nums = map { ($_ * 2654435761) % 1000003 } 1 .. $n;
my @sn = sort { $a <=> $b } @nums;
my @ss = sort @words[0 .. 49999];
my @mk = map { $_->[1] } sort { $a->[0] <=> $b->[0] or $a->[1] cmp $b->[1] }
  map { [length($_), $_] } @words[0 .. 49999];
print "sort $sn[0] $sn[-1] $sn[$#sn / 2] $ss[0] $ss[-1] $mk[0] $mk[-1]\n";

# 4. nested data: hash of arrays of hashes, built and torn down several times
my $total = 0;
for my $round (1 .. 5) {
  my %tree;
  for my $i (1 .. 30000) {
    push @{ $tree{ $i % 97 } }, { id => $i, name => "n$i" x (1 + $i % 3), list => [1 .. $i % 20] };
  }
  for my $k (sort { $a <=> $b } keys %tree) {
    for my $e (@{ $tree{$k} }) { $total += $e->{id} + @{ $e->{list} } + length($e->{name}); }
  }
}
print "nested $total\n";

# 5. string growth and a big join/split round trip
my $s = "";
$s .= sprintf("%d:%s;", $_, $words[$_ % @words]) for 1 .. 100000;
my @back = split /;/, $s;
print "string ", length($s), " ", scalar(@back), " $back[-1]\n";

# 6. sprintf/pack/unpack and a hash slice
my %h;
@h{ map { "k$_" } 1 .. 50000 } = map { pack("N n a8", $_, $_ % 65536, "x$_") } 1 .. 50000;
my $u = 0;
for my $k (sort keys %h) {
  my ($num, $short) = unpack("N n a8", $h{$k});
  $u = ($u + $num * 3 + $short) % 1000000007;
}
print "pack $u\n";
