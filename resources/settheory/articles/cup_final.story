Fenwick Rovers won the county cup on Sunday, beating Harlow Town 2-1 in the final.

Harlow took the lead after ten minutes through a header from their captain.

Rovers equalised just before half-time when a shot deflected off a defender.

The winning goal came in the last minute of the match.

Nineteen-year-old striker Sam Kerridge scored it from outside the penalty area.

It was the club's first trophy in twenty-two years.

More than six thousand fans watched the game at the county ground.

The Rovers manager said the victory belonged to the whole town.

@highlight

Fenwick Rovers beat Harlow Town 2-1 to win the county cup

@highlight

A last-minute goal by a 19-year-old decided the final
