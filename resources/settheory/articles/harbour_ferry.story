A new electric ferry began carrying passengers across the harbour of Westmere on Monday morning.

The vessel replaces two diesel boats that had served the crossing for more than thirty years.

Council officials said the ferry can carry 250 passengers and forty bicycles on each trip.

Its batteries are charged at the northern pier during a ten-minute stop.

The first crossing was delayed by fog, but the ferry arrived on time for the rest of the day.

Commuters who rode it said the cabin was quieter and warmer than on the old boats.

The council expects to save about 400,000 pounds a year on fuel.

A second electric ferry is due to join the route next spring.

@highlight

Electric ferry starts service across Westmere harbour

@highlight

It replaces two diesel boats and carries 250 passengers
