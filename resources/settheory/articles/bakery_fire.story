A fire destroyed a family bakery on Mill Street in Harton early on Wednesday.

Neighbours called the fire brigade at about four in the morning after seeing smoke.

Four fire engines attended and the flames were out within an hour.

No one was hurt, because the bakers had not yet arrived for work.

The bakery had been run by the Ellison family since 1962.

Investigators believe the fire started in an electrical cabinet behind the ovens.

Customers have already raised more than 20,000 pounds online to help rebuild it.

The family said they hope to be baking again by the summer.

@highlight

Fire destroys the Ellison family's bakery in Harton

@highlight

No one was hurt; customers raise money to rebuild
