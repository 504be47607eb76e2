NAME golden_model FREE
ROWS
 N obj
 L cap
 G obj_1
 E link
 L empty
COLUMNS
 a_1_ obj 1
 a_1_ cap 1
 a_1_ link 1
 _2b obj -1
 _2b cap -2.5
 _e1 obj 0.5
 _e1 obj_1 1
 _e1 link -1
 MARKER 'MARKER' 'INTORG'
 a_1__3 obj 2
 a_1__3 cap 3
 _bound obj -3
 _bound obj_1 1
 MARKER 'MARKER' 'INTEND'
 fixed link 1
 MARKER 'MARKER' 'INTORG'
 neg obj 1
 neg link 1
 MARKER 'MARKER' 'INTEND'
 lonely obj 0.25
 MARKER 'MARKER' 'INTORG'
 tight_bin link 1
 MARKER 'MARKER' 'INTEND'
RHS
 RHS obj 7.5
 RHS cap 10
 RHS obj_1 -1
 RHS link 0.5
 RHS empty 1
BOUNDS
 UP BND a_1_ 4
 UP BND _2b 3
 MI BND _2b
 FR BND _e1
 LO BND a_1__3 -2
 PL BND a_1__3
 UP BND _bound 1
 LO BND _bound 0
 FX BND fixed 2.5
 UP BND neg -1
 LO BND neg -5
 UP BND lonely 2
 LO BND lonely 1
 FX BND tight_bin 1
ENDATA
